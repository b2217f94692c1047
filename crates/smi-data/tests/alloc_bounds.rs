//! Sizes read from a file must not be trusted before they are checked against the file: an IDX
//! header announcing huge dimensions must neither abort on allocation nor allocate much at all.
//!
//! A counting global allocator records the largest single allocation of the current thread.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::Write;
use std::path::Path;

use smi_data::{read_idx_images, read_idx_labels, IMAGES_MAGIC, LABELS_MAGIC};

struct Tracking;

thread_local! {
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

fn record(size: usize) {
    let _ = LARGEST.try_with(|m| m.set(m.get().max(size)));
}

// SAFETY: forwards every call to `System` unchanged; only records sizes.
unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        record(layout.size());
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        record(layout.size());
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        record(new_size);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Tracking = Tracking;

/// Runs `f` and returns the largest single allocation it made on this thread.
fn largest_allocation(f: impl FnOnce()) -> usize {
    LARGEST.with(|m| m.set(0));
    f();
    LARGEST.with(Cell::get)
}

fn gz(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

const LIMIT: usize = 1 << 20;

/// Writes `raw` as `<stem>.idx` and, gzip-compressed, as `<stem>.gz` in `dir`; `read` must fail
/// on both with every limit, naming the file, while allocating less than [`LIMIT`] bytes at a
/// time. `what` starts the failure messages.
fn check_rejected(
    dir: &Path,
    stem: &str,
    raw: &[u8],
    limits: &[Option<usize>],
    what: &str,
    read: impl Fn(&Path, Option<usize>) -> smi_data::Result<()>,
) {
    for (name, bytes) in [
        (format!("{stem}.idx"), raw.to_vec()),
        (format!("{stem}.gz"), gz(raw)),
    ] {
        let p = dir.join(&name);
        std::fs::write(&p, bytes).unwrap();
        for &limit in limits {
            let largest = largest_allocation(|| {
                let msg = read(&p, limit).unwrap_err().to_string();
                assert!(msg.contains(&name), "{msg}");
            });
            assert!(
                largest < LIMIT,
                "{what}{name} {limit:?}: allocated {largest} bytes"
            );
        }
    }
}

#[test]
fn huge_idx_headers_are_rejected_without_large_allocations() {
    let tmp = tempfile::tempdir().unwrap();
    let dims: [(u32, u32, u32); 5] = [
        (65535, 65535, 65535),
        (1, 65535, 65535),
        (65535, 65535, 1),
        (u32::MAX, 28, 28),
        (u32::MAX, u32::MAX, u32::MAX),
    ];
    for (count, rows, cols) in dims {
        let mut raw = Vec::new();
        for x in [IMAGES_MAGIC, count, rows, cols] {
            raw.extend_from_slice(&x.to_be_bytes());
        }
        raw.extend_from_slice(&[7u8; 100]);
        let what = format!("{count}×{rows}×{cols} ");
        check_rejected(
            tmp.path(),
            "h",
            &raw,
            &[None, Some(10), Some(100_000)],
            &what,
            |p, limit| read_idx_images(p, limit).map(drop),
        );
    }
    let mut raw = Vec::new();
    raw.extend_from_slice(&LABELS_MAGIC.to_be_bytes());
    raw.extend_from_slice(&u32::MAX.to_be_bytes());
    raw.extend_from_slice(&[1u8; 100]);
    check_rejected(
        tmp.path(),
        "l",
        &raw,
        &[None, Some(1_000_000)],
        "",
        |p, limit| read_idx_labels(p, limit).map(drop),
    );
}
