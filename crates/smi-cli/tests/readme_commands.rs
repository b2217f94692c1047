//! README.md's test command is the one CI runs: the code block after "Run the tests:" is one
//! command, and `.ci/run` runs it as a line of its own before anything else it runs.

use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The lines of the first fenced code block after the line `Run the tests:`.
fn readme_test_block(readme: &str) -> Vec<String> {
    let mut lines = readme.lines().skip_while(|l| l.trim() != "Run the tests:");
    let mut block = Vec::new();
    let mut inside = false;
    for l in lines.by_ref().skip(1) {
        if l.trim_start().starts_with("```") {
            if inside {
                return block;
            }
            inside = true;
        } else if inside {
            block.push(l.trim().to_string());
        }
    }
    block
}

#[test]
fn ci_runs_the_readme_test_command_first() {
    let root = repo_root();
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let block = readme_test_block(&readme);
    let commands: Vec<&String> = block.iter().filter(|l| !l.is_empty()).collect();
    assert_eq!(commands.len(), 1, "README's test block: {block:?}");
    let command = commands[0].as_str();
    let ci = std::fs::read_to_string(root.join(".ci/run")).expect(".ci/run");
    // the lines .ci/run executes, comments and the shell set-up aside
    let run: Vec<&str> = ci
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter(|l| !l.starts_with("set ") && !l.starts_with("cd ") && !l.starts_with("export "))
        .collect();
    assert_eq!(
        run.first().copied(),
        Some(command),
        ".ci/run must run README's test command `{command}` first; it runs {run:?}"
    );
    // and the command is a script in the repository that can be executed
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let script = root.join(command.trim_start_matches("./"));
        let mode = std::fs::metadata(&script)
            .unwrap_or_else(|e| panic!("{}: {e}", script.display()))
            .permissions()
            .mode();
        assert!(mode & 0o111 != 0, "{} is not executable", script.display());
    }
}

#[test]
fn the_block_reader_finds_one_command() {
    let text = "intro\n\nRun the tests:\n\n```sh\n./dev/test\n```\n\nmore\n```sh\nother\n```\n";
    assert_eq!(readme_test_block(text), ["./dev/test"]);
    assert!(readme_test_block("no such heading\n```\nx\n```\n").is_empty());
}
