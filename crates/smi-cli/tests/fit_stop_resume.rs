//! `smi fit` that stops before its budget: `--max-time`, Ctrl-C, the checkpoint and `--resume`,
//! and plain progress lines when stderr is not a terminal.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use common::fit::*;
use common::{fails, p, smi_ok, stdout};

/// The payload of a model file (the bytes after its header line).
fn payload(path: &Path) -> Vec<u8> {
    let bytes = std::fs::read(path).unwrap();
    let nl = bytes.iter().position(|&b| b == b'\n').unwrap();
    bytes[nl + 1..].to_vec()
}

/// The checkpoint files of a model saved to `model`.
fn checkpoint(model: &Path) -> [std::path::PathBuf; 2] {
    [".ckpt", ".ckpt.json"].map(|e| {
        let mut s = model.as_os_str().to_os_string();
        s.push(e);
        s.into()
    })
}

/// A fit stopped by `--max-time` saves the model as it is and a checkpoint; `--resume` then
/// takes exactly the steps the uninterrupted fit takes (every random choice is in the saved
/// state), so both models are the same bytes.
#[test]
fn max_time_stops_and_resume_continues_the_same_fit() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (train, _) = regression_files(dir, [80, 1], 0.2, [5, 6], Some(4));
    let base = "--target y --hidden 4 --elbo-draws 2 --no-early-stop --seed 2 --max-steps 30";
    let opts = &format!("{base} --lr 5e-3");
    let whole = dir.join("whole.smi");
    ok(&fit_args(&train, &whole, opts));
    assert!(checkpoint(&whole).iter().all(|c| !c.exists()));

    // --max-time 0: the deadline has passed when training starts, so its observer stops the
    // run after the first step.
    let part = dir.join("part.smi");
    let stopped = format!("{opts} --max-time 0");
    let err = ok(&fit_args(&train, &part, &stopped));
    for needle in [
        "1 steps",
        "stopped at --max-time",
        "--resume",
        "part.smi.ckpt",
    ] {
        assert!(err.contains(needle), "{needle:?} not in {err}");
    }
    assert!(checkpoint(&part).iter().all(|c| c.exists()));
    let text = stdout(&smi_ok(&["inspect", "--model", p(&part)]));
    assert!(text.contains("stopped      max-time"), "{text}");

    // Resuming with other settings is refused; with the same ones it finishes the fit.
    fails(
        &fit_args(&train, &part, &format!("{base} --lr 1e-2 --resume")),
        &["--resume", "--lr 5e-3, not 1e-2"],
    );
    fails(
        &fit_args(&train, &part, &format!("{opts} --particles 3 --resume")),
        &["--resume", "another configuration"],
    );
    let err = ok(&fit_args(&train, &part, &format!("{opts} --resume")));
    assert!(
        err.contains("resuming from") && err.contains("at step 1 of 30"),
        "{err}"
    );
    assert!(
        checkpoint(&part).iter().all(|c| !c.exists()),
        "kept after finishing"
    );
    assert_eq!(payload(&part), payload(&whole), "resumed fit differs");
    fails(
        &fit_args(&train, &part, &format!("{opts} --resume")),
        &["--resume", "cannot read the checkpoint"],
    );
}

/// Ctrl-C during training saves the model as it is and a checkpoint, and exits with 130; on a
/// pipe, progress comes as plain lines.
#[cfg(unix)]
#[test]
fn ctrl_c_saves_the_model_and_a_checkpoint() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (train, _) = regression_files(dir, [80, 1], 0.2, [5, 6], Some(4));
    let model = dir.join("m.smi");
    // A fit far too long to finish (--max-time is only a backstop should the signal be lost).
    let args = fit_args(
        &train,
        &model,
        "--target y --hidden 4 --elbo-draws 2 --no-early-stop --lr 5e-3 --max-steps 100000000 \
         --max-time 300 --progress-every 0.05",
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_smi"))
        .args(&args)
        .env_remove("SMI_NO_PROGRESS")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = Vec::new();
    let mut sent = false;
    // Read every line (a full pipe would block the fit), interrupting at the first progress
    // line: the fit is then training.
    for line in BufReader::new(child.stderr.take().unwrap()).lines() {
        let line = line.unwrap();
        if !sent && line.starts_with("fit smi: step ") {
            let kill = Command::new("kill")
                .args(["-INT", &child.id().to_string()])
                .status()
                .unwrap();
            assert!(kill.success());
            sent = true;
        }
        lines.push(line);
    }
    let status = child.wait().unwrap();
    let err = lines.join("\n");
    assert!(sent, "no progress line:\n{err}");
    assert_eq!(status.code(), Some(130), "{err}");
    let progress = lines
        .iter()
        .find(|l| l.starts_with("fit smi: step "))
        .unwrap();
    assert!(
        progress.contains("/100000000") && progress.contains("loss") && progress.contains("left"),
        "{progress}"
    );
    assert!(
        err.contains("(interrupted)") && err.contains("--resume"),
        "{err}"
    );
    assert!(checkpoint(&model).iter().all(|c| c.exists()));
    let text = stdout(&smi_ok(&["inspect", "--model", p(&model)]));
    assert!(text.contains("stopped      interrupted"), "{text}");
}

/// `--resume` refuses a model other than the checkpoint's: another target, feature order,
/// activation, prior scale or target scaling, each named with the value that resumes it.
#[test]
fn resume_refuses_another_model() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (train, _) = regression_files(dir, [60, 1], 0.2, [5, 6], Some(4));
    let base = "--hidden 4 --elbo-draws 2 --no-early-stop --seed 2 --max-steps 30 --lr 5e-3";
    let opts = &format!("--target y {base}");
    let part = dir.join("part.smi");
    ok(&fit_args(&train, &part, &format!("{opts} --max-time 0")));
    assert!(checkpoint(&part).iter().all(|c| c.exists()));
    for (change, needles) in [
        (
            "--target x2 --features x1,y",
            &["--target y, not x2"] as &[&str],
        ),
        ("--features x2,x1", &["--features x1,x2, not x2,x1"]),
        ("--activation tanh", &["--activation relu, not tanh"]),
        ("--prior-scale 2", &["--prior-scale 1, not 2"]),
        (
            "--target-scaling none",
            &["--target-scaling standardize, not none"],
        ),
    ] {
        let target = if change.starts_with("--target ") {
            ""
        } else {
            "--target y "
        };
        let args = format!("{target}{base} {change} --resume");
        let mut want = vec!["--resume"];
        want.extend_from_slice(needles);
        fails(&fit_args(&train, &part, &args), &want);
        assert!(
            checkpoint(&part).iter().all(|c| c.exists()),
            "{change}: a refused resume keeps the checkpoint"
        );
    }
    // The options as they were (the activation and target scaling given as their defaults
    // resolve to the same model) finish it.
    let same = format!("{opts} --activation relu --target-scaling standardize --resume");
    ok(&fit_args(&train, &part, &same));
    assert!(checkpoint(&part).iter().all(|c| !c.exists()));
}

/// A kill (SIGKILL, no chance to clean up) at any moment of `smi fit` leaves the model or a
/// checkpoint that `--resume` finishes: kills spread over the whole run, validation and saving
/// included (large --draws makes validation take a while).
#[cfg(unix)]
#[test]
fn a_kill_at_any_moment_leaves_the_model_or_a_checkpoint() {
    use std::time::Instant;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (train, _) = regression_files(dir, [200, 1], 0.2, [5, 6], Some(4));
    let opts = "--target y --hidden 8 --elbo-draws 2 --no-early-stop --seed 2 --max-steps 400 \
                --lr 5e-3 --validation 0.3 --draws 200000 --checkpoint-every 0.05";
    // How long a whole run takes here.
    let whole = dir.join("whole.smi");
    let t0 = Instant::now();
    ok(&fit_args(&train, &whole, opts));
    let total = t0.elapsed();
    let mut resumed = 0;
    for i in 1..=8u32 {
        let model = dir.join(format!("killed{i}.smi"));
        let args = fit_args(&train, &model, opts);
        let mut child = Command::new(env!("CARGO_BIN_EXE_smi"))
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(total.mul_f64(f64::from(i) / 8.0));
        let _ = child.kill();
        let _ = child.wait();
        let saved = model.exists();
        let ckpt = checkpoint(&model).iter().all(|c| c.exists());
        if ckpt {
            // The checkpoint resumes, to a model.
            ok(&fit_args(&train, &model, &format!("{opts} --resume")));
            resumed += 1;
        } else if !saved {
            // Killed before the first save of the state: no step was kept, so none was lost
            // but those of the first --checkpoint-every interval.
            assert!(
                !checkpoint(&model)[0].exists(),
                "kill {i} of 8 left a state without its meta file"
            );
        }
        if saved || ckpt {
            smi_ok(&["inspect", "--model", p(&model)]);
        }
    }
    assert!(resumed > 0, "no kill landed while a checkpoint existed");
}
