//! Property tests of the checkpoint loader: arbitrary bytes, byte-level edits and structural
//! (JSON) edits of valid checkpoints fed to `State::load` and `Engine::load_state` never panic.
//! Each gives an error or a state that passes `State::validate`, which an engine can then step,
//! turn into a posterior and save again without panicking.
//!
//! 256 cases per property by default, so the file runs in a few seconds; the `PROPTEST_CASES`
//! environment variable sets another count, e.g. for a longer run:
//!
//! ```text
//! PROPTEST_CASES=100000 cargo test -p smi --release --test checkpoint_fuzz -- --nocapture
//! ```

use std::path::Path;
use std::sync::OnceLock;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::Value;
use smi::testing::DiagNormal;
use smi::{
    Engine, OptimizerSettings, State, SteinSettings, SteinVi, Svi, SviSettings, CHECKPOINT_FORMAT,
};

/// Cases per property unless `PROPTEST_CASES` says otherwise.
const DEFAULT_CASES: u32 = 256;

/// The runner configuration: [`DEFAULT_CASES`] cases or `PROPTEST_CASES`, failures persisted
/// next to this file as proptest does for its macro.
fn config() -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(DEFAULT_CASES);
    Config {
        cases,
        source_file: Some(file!()),
        ..Config::default()
    }
}

fn target() -> &'static DiagNormal {
    static TARGET: OnceLock<DiagNormal> = OnceLock::new();
    TARGET.get_or_init(|| DiagNormal::standard(2).unwrap())
}

/// The engines whose checkpoints are fuzzed: SMI with Adam (3 Normal particles, 3×4) and MAP
/// with Adagrad (one Delta particle, 1×2).
fn engines() -> Vec<Box<dyn Engine + 'static>> {
    let smi = SteinSettings {
        num_particles: 3,
        num_elbo_particles: 2,
        optimizer: OptimizerSettings::adam(0.05),
        seed: 7,
        ..SteinSettings::smi()
    };
    let map = SviSettings {
        optimizer: OptimizerSettings::adagrad(0.1),
        init: smi::Init::Uniform { radius: 1.0 },
        seed: 3,
        ..SviSettings::map()
    };
    vec![
        Box::new(SteinVi::new(target(), smi).unwrap()),
        Box::new(Svi::new(target(), map).unwrap()),
    ]
}

/// A valid checkpoint of each engine after a few steps, as bytes.
fn valid_checkpoints() -> &'static Vec<Vec<u8>> {
    static BYTES: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("valid.json");
        engines()
            .iter()
            .map(|e| {
                let mut st = e.init().unwrap();
                for _ in 0..3 {
                    e.step(&mut st, None).unwrap();
                }
                st.save(&path).unwrap();
                let bytes = std::fs::read(&path).unwrap();
                assert!(e.load_state(&path).is_ok());
                bytes
            })
            .collect()
    })
}

/// What one case saw.
#[derive(Default)]
struct Tally {
    cases: usize,
    loaded: usize,
}

/// Writes `bytes` to a file and loads it into engine `which` both ways; a state that loads
/// must be valid and survive a step, a posterior and a save.
fn load_and_use(which: usize, bytes: &[u8], tally: &mut Tally) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().map_err(|e| TestCaseError::fail(e.to_string()))?;
    let path = dir.path().join("case.json");
    std::fs::write(&path, bytes).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let engine = &engines()[which];
    tally.cases += 1;
    for loaded in [
        State::load(&path, &engine.fingerprint()),
        engine.load_state(&path),
    ] {
        let Ok(mut state) = loaded else { continue };
        tally.loaded += 1;
        prop_assert!(state.validate().is_ok(), "a loaded state is valid");
        use_state(engine.as_ref(), &mut state, dir.path())?;
    }
    Ok(())
}

/// Steps, samples and saves a loaded state: each may fail, none may panic.
fn use_state(engine: &dyn Engine, state: &mut State, dir: &Path) -> Result<(), TestCaseError> {
    let _ = engine.step(state, None);
    let post = engine.posterior(state);
    let mut rng = <smi::rand::ChaCha8Rng as smi::rand::SeedableRng>::seed_from_u64(0);
    let _ = post.sample(3, &mut rng);
    let _ = (post.mean(), post.marginal_variance(), post.locations());
    let again = dir.join("again.json");
    if state.save(&again).is_ok() {
        prop_assert!(State::load(&again, &state.fingerprint).is_ok());
    }
    Ok(())
}

/// Runs `test` on `strategy` for [`config`]'s cases and prints the tally.
fn check<S: Strategy>(
    name: &str,
    strategy: S,
    test: impl Fn(S::Value, &mut Tally) -> Result<(), TestCaseError>,
) -> Tally {
    let mut runner = TestRunner::new(config());
    let tally = std::cell::RefCell::new(Tally::default());
    let result = runner.run(&strategy, |v| test(v, &mut tally.borrow_mut()));
    if let Err(e) = result {
        panic!("{name}: {e}");
    }
    let t = tally.into_inner();
    eprintln!("{name}: {} cases, {} loads succeeded", t.cases, t.loaded);
    t
}

#[test]
fn arbitrary_bytes_never_panic() {
    let bytes = prop_oneof![
        prop::collection::vec(any::<u8>(), 0..256),
        // JSON-looking noise gets past the first byte.
        "[ -~]{0,200}"
            .prop_map(|s| format!("{{\"format\":\"{CHECKPOINT_FORMAT}\",{s}").into_bytes()),
    ];
    check("arbitrary bytes", (0..2usize, bytes), |(which, b), t| {
        load_and_use(which, &b, t)
    });
}

/// One byte-level edit: overwrite, insert or delete at a position (taken modulo the length),
/// or cut the file there.
#[derive(Clone, Debug)]
enum ByteEdit {
    Set(usize, u8),
    Insert(usize, u8),
    Delete(usize),
    Truncate(usize),
}

fn byte_edit() -> impl Strategy<Value = ByteEdit> {
    // Digits, signs and JSON punctuation make most edits parse.
    let byte = prop_oneof![
        3 => prop::sample::select(b"0123456789-+.eE,[]{}\":n".to_vec()),
        1 => any::<u8>(),
    ];
    prop_oneof![
        4 => (any::<usize>(), byte.clone()).prop_map(|(i, b)| ByteEdit::Set(i, b)),
        2 => (any::<usize>(), byte).prop_map(|(i, b)| ByteEdit::Insert(i, b)),
        2 => any::<usize>().prop_map(ByteEdit::Delete),
        1 => any::<usize>().prop_map(ByteEdit::Truncate),
    ]
}

#[test]
fn byte_edits_of_valid_checkpoints_never_panic() {
    let edits = prop::collection::vec(byte_edit(), 1..6);
    let t = check("byte edits", (0..2usize, edits), |(which, edits), t| {
        let mut b = valid_checkpoints()[which].clone();
        for edit in edits {
            let n = b.len().max(1);
            match edit {
                ByteEdit::Set(i, v) if !b.is_empty() => b[i % n] = v,
                ByteEdit::Insert(i, v) => b.insert(i % (b.len() + 1), v),
                ByteEdit::Delete(i) if !b.is_empty() => drop(b.remove(i % n)),
                ByteEdit::Truncate(i) => b.truncate(i % n),
                _ => {}
            }
        }
        load_and_use(which, &b, t)
    });
    assert!(t.loaded > 0 || t.cases < 64, "no edited checkpoint loaded");
}

/// One structural edit of the JSON tree, at the node chosen by an index into its nodes.
#[derive(Clone, Debug)]
enum JsonEdit {
    /// Replaces the node by a value.
    Replace(usize, Value),
    /// Removes an element of an array or a key of an object (the child chosen by the second
    /// index).
    Remove(usize, usize),
    /// Appends a value to an array.
    Push(usize, Value),
    /// Cuts an array to a length.
    Truncate(usize, usize),
}

/// Replacement values: numbers of every kind (huge counts for `rows`/`cols`, negative, fractional
/// where integers belong), and the other JSON types.
fn json_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => (0u64..16).prop_map(Value::from),
        3 => any::<u64>().prop_map(Value::from),
        2 => any::<i64>().prop_map(Value::from),
        3 => any::<f64>().prop_map(Value::from),
        1 => prop::sample::select(vec![
            Value::from(u64::MAX),
            Value::from(1u64 << 32),
            Value::from(1e300),
            Value::from(-1e300),
            Value::from(-0.0),
            Value::from(0.5),
        ]),
        1 => Just(Value::Null),
        1 => any::<bool>().prop_map(Value::from),
        1 => "[a-z_]{0,8}".prop_map(Value::from),
        1 => Just(Value::Array(Vec::new())),
        1 => Just(serde_json::json!({"kind": "sgd"})),
    ]
}

fn json_edit() -> impl Strategy<Value = JsonEdit> {
    prop_oneof![
        5 => (any::<usize>(), json_value()).prop_map(|(i, v)| JsonEdit::Replace(i, v)),
        2 => (any::<usize>(), any::<usize>()).prop_map(|(i, j)| JsonEdit::Remove(i, j)),
        2 => (any::<usize>(), json_value()).prop_map(|(i, v)| JsonEdit::Push(i, v)),
        1 => (any::<usize>(), 0..20usize).prop_map(|(i, n)| JsonEdit::Truncate(i, n)),
    ]
}

/// The number of nodes of `v` (itself included), in pre-order.
fn count_nodes(v: &Value) -> usize {
    1 + match v {
        Value::Array(a) => a.iter().map(count_nodes).sum(),
        Value::Object(o) => o.values().map(count_nodes).sum(),
        _ => 0,
    }
}

/// The `i`-th node of `v` in pre-order (`i` < [`count_nodes`]).
fn node_mut(v: &mut Value, mut i: usize) -> Option<&mut Value> {
    if i == 0 {
        return Some(v);
    }
    i -= 1;
    let children: Vec<&mut Value> = match v {
        Value::Array(a) => a.iter_mut().collect(),
        Value::Object(o) => o.values_mut().collect(),
        _ => return None,
    };
    for c in children {
        let n = count_nodes(c);
        if i < n {
            return node_mut(c, i);
        }
        i -= n;
    }
    None
}

fn apply(json: &mut Value, edit: JsonEdit) {
    let n = count_nodes(json);
    let at = |i: usize| i % n;
    match edit {
        JsonEdit::Replace(i, v) => {
            // Not the root: keep an envelope so the edit reaches the state's fields.
            if let Some(node) = node_mut(json, at(i).max(1)) {
                *node = v;
            }
        }
        JsonEdit::Remove(i, j) => match node_mut(json, at(i)) {
            Some(Value::Array(a)) if !a.is_empty() => drop(a.remove(j % a.len())),
            Some(Value::Object(o)) if !o.is_empty() => {
                let key = o.keys().nth(j % o.len()).cloned();
                if let Some(k) = key {
                    o.remove(&k);
                }
            }
            _ => {}
        },
        JsonEdit::Push(i, v) => {
            if let Some(Value::Array(a)) = node_mut(json, at(i)) {
                a.push(v);
            }
        }
        JsonEdit::Truncate(i, len) => {
            if let Some(Value::Array(a)) = node_mut(json, at(i)) {
                a.truncate(len);
            }
        }
    }
}

#[test]
fn structural_edits_of_valid_checkpoints_never_panic() {
    let edits = prop::collection::vec(json_edit(), 1..4);
    let t = check("JSON edits", (0..2usize, edits), |(which, edits), t| {
        let mut json: Value = serde_json::from_slice(&valid_checkpoints()[which]).unwrap();
        for edit in edits {
            apply(&mut json, edit);
        }
        let bytes = serde_json::to_vec(&json).map_err(|e| TestCaseError::fail(e.to_string()))?;
        load_and_use(which, &bytes, t)
    });
    assert!(t.loaded > 0 || t.cases < 64, "no edited checkpoint loaded");
}

#[test]
fn the_harness_tree_walk_reaches_every_node() {
    let mut v = serde_json::json!({"a": [1, {"b": 2}], "c": 3});
    assert_eq!(count_nodes(&v), 6);
    apply(&mut v, JsonEdit::Replace(4, Value::from(9)));
    assert_eq!(v, serde_json::json!({"a": [1, {"b": 9}], "c": 3}));
    apply(&mut v, JsonEdit::Remove(1, 0));
    assert_eq!(v, serde_json::json!({"a": [{"b": 9}], "c": 3}));
}
