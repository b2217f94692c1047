//! Unit tests.

use super::*;

#[test]
fn paper_rates_decode() {
    let lr = |d, k, m| paper_lr(d, k, m).unwrap();
    assert_eq!(
        lr(UciDataset::Boston, SplitKind::Standard, Method::Svgd),
        5e-6
    );
    assert_eq!(
        lr(UciDataset::Boston, SplitKind::Standard, Method::Smi),
        5e-5
    );
    assert_eq!(
        lr(UciDataset::Concrete, SplitKind::Standard, Method::Svgd),
        5e-2
    );
    assert_eq!(lr(UciDataset::Energy, SplitKind::Gap10, Method::Map), 5e-2);
    assert_eq!(lr(UciDataset::Wine, SplitKind::Gap10, Method::Smi), 5e-2);
    assert!(paper_lr(UciDataset::Yacht, SplitKind::Gap10, Method::Nuts).is_none());
}

#[test]
fn option_parsing() {
    let set = parse_splits("0,3-5,3,6,9").unwrap().unwrap();
    assert_eq!(set.0, vec![(0, 0), (3, 6), (9, 9)]);
    assert_eq!(set.below(5), vec![0, 3, 4]);
    assert_eq!(set.at_or_above(5), "5-6, 9");
    assert_eq!(set.max(), 9);
    // A huge range is two numbers, not four billion.
    let huge = parse_splits("0-4294967295").unwrap().unwrap();
    assert_eq!(huge.below(3), vec![0, 1, 2]);
    assert_eq!(huge.at_or_above(20), "20-4294967295");
    assert_eq!(parse_splits("all").unwrap(), None);
    assert!(parse_splits("5-2").is_err());
    assert!(parse_splits("x").is_err());
    assert_eq!(parse_shard("1/3").unwrap(), (1, 3));
    assert!(parse_shard("3/3").is_err());
    assert!(parse_shard("1").is_err());
    let e = parse_methods("smi,foo").unwrap_err();
    assert!(format!("{e:#}").contains("asvgd"), "{e:#}");
    assert_eq!(
        parse_methods("map,smi,map").unwrap(),
        vec![Method::Map, Method::Smi]
    );
    let e = parse_datasets("mnist").unwrap_err().to_string();
    assert!(e.contains("yacht"), "{e}");
    assert_eq!(parse_datasets("all").unwrap().len(), 9);
    assert_eq!(parse_kinds("both").unwrap().len(), 2);
    assert!(parse_kinds("gap20").is_err());
    assert_eq!("tune".parse::<LrMode>().unwrap(), LrMode::Tune);
    assert_eq!("5e-3".parse::<LrMode>().unwrap(), LrMode::Fixed(5e-3));
    assert!("-1".parse::<LrMode>().is_err());
}

/// The options of `smi reproduce uci` with `extra` on the command line.
fn args(extra: &[&str]) -> Args {
    crate::parse_args(extra)
}

#[test]
fn a_gpu_run_has_its_own_config_and_files() {
    // SMI on a GPU: the config gains the device (the records sit beside the CPU's), and its
    // state and lock files a tag; the other methods' configs do not change
    let cpu = Plan::new(&args(&[])).unwrap();
    let gpu = Plan::new(&args(&["--device", "cuda"])).unwrap();
    assert!(gpu
        .config(Method::Smi, Some(5e-5))
        .ends_with("|pred=5000|device=cuda|seed=0"));
    assert!(gpu.file_tag(Method::Smi).starts_with("-device-"));
    assert_eq!(
        gpu.config(Method::Ovi, Some(5e-5)),
        cpu.config(Method::Ovi, Some(5e-5))
    );
    assert!(Plan::new(&args(&["--device", "tpu"])).is_err());
}

#[test]
fn configs_differ_by_setting() {
    let p = Plan::new(&args(&[])).unwrap();
    let q = Plan::new(&args(&["--max-steps", "100"])).unwrap();
    let r = Plan::new(&args(&["--seed", "3"])).unwrap();
    let a = Plan::new(&args(&["--attraction", "numpyro"])).unwrap();
    let nd = Plan::new(&args(&["--defect", "no-chain-rule"])).unwrap();
    // the default attraction adds nothing: records made before the option still match
    assert_eq!(
        p.config(Method::Smi, Some(5e-5)),
        "lr=5e-5|steps<=60000|es=35x2|m=5|S=100|b=100|init=U0.1|pred=5000|seed=0"
    );
    for m in Method::ALL {
        let c = p.config(m, Some(1e-3));
        // only SMI has the attraction option
        assert_eq!(c == a.config(m, Some(1e-3)), m != Method::Smi, "{m}");
        // and the defect switch: a different SMI config, named in it
        let c_nd = nd.config(m, Some(1e-3));
        assert_eq!(c == c_nd, m != Method::Smi, "{m}");
        assert_eq!(
            c_nd.contains("|defect=no-chain-rule"),
            m == Method::Smi,
            "{m}"
        );
        assert_eq!(c, p.config(m, Some(1e-3)));
        assert_ne!(c, r.config(m, Some(1e-3)));
        if m != Method::Nuts {
            assert_ne!(c, q.config(m, Some(1e-3)));
            assert_ne!(c, p.config(m, Some(1e-4)));
        }
    }
}

#[test]
fn the_report_puts_ours_beside_the_paper() {
    // Two SMI splits of Boston (NLL 2.0 and 3.0: 2.50 ± 0.50; RMSE 3.0 and 3.5) and one
    // Kin8nm MAP split from an older binary without cpu_seconds.
    let rec = |ds: &str, m: &str, split: u64, nll: f64, rmse: f64, cpu: Option<f64>| {
        let Value::Object(mut r) = json!({"dataset": ds, "method": m, "split_kind": "standard",
            "split": split, "config": "c",
            "metrics": {"nll": nll, "rmse": rmse, "nll_paper": nll, "rmse_paper": rmse,
                        "seconds_per_step": 0.001}})
        else {
            unreachable!()
        };
        if let Some(c) = cpu {
            r.insert("cpu_seconds".into(), json!(c));
        }
        r
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    records::append(
        out,
        EXPERIMENT,
        rec("boston", "smi", 0, 2.0, 3.0, Some(5400.0)),
    )
    .unwrap();
    records::append(out, EXPERIMENT, rec("boston", "smi", 1, 3.0, 3.5, None)).unwrap();
    records::append(out, EXPERIMENT, rec("kin8nm", "map", 0, -0.5, 0.08, None)).unwrap();
    report(out).unwrap();
    let md = std::fs::read_to_string(out.join("uci.md")).unwrap();
    let section =
        &md[md.find("## Beside the paper").unwrap()..md.find("## Paper metrics").unwrap()];
    // ours beside the paper's 2.6 ± 0.6 and 2.9 ± 0.7 (docs/algorithms.md §9.1); CPU hours
    // of the one split that has them
    assert!(
        section.contains("| boston | SMI | 2 | 2.50 ± 0.50 | 2.6 ± 0.6 | 3.25 ± 0.25 | 2.9 ± 0.7 | 1.50 (1 of 2) |"),
        "{section}"
    );
    // the paper prints Kin8nm's RMSE without a std; none of our units has CPU time
    assert!(
        section.contains(
            "| kin8nm | MAP | 1 | -0.500 ± 0.000 | -0.5 ± 0.0 | 0.0800 ± 0.0000 | 0.1 | – |"
        ),
        "{section}"
    );
    assert!(!section.contains("### Gap10"), "{section}");
    // beside Deep Ensembles (data/deep_ensembles_uci.csv), on the proper metrics
    let peers =
        &md[md.find("## Beside Deep Ensembles").unwrap()..md.find("## Paper metrics").unwrap()];
    assert!(
        peers.contains("| boston | 2.50 ± 0.50 | 2.50 ± 0.50 (SMI) | 2.41 ± 0.25 | 3.25 ± 0.25 | 3.25 ± 0.25 (SMI) | 3.28 ± 1.00 |"),
        "{peers}"
    );
    assert!(
        peers.contains("| kin8nm | – | -0.500 ± 0.000 (MAP) | -1.20 ± 0.02 | – | 0.0800 ± 0.0000 (MAP) | 0.09 ± 0.00 |"),
        "{peers}"
    );
}

#[test]
fn runs_with_a_reproduced_defect_or_an_ablation_are_reported_apart() {
    // Three correct SMI splits of energy, two with the no-chain-rule defect and three of an
    // ablation (more records, or as many, would not let them stand for SMI either): the main
    // table keeps the correct ones, each section puts its runs beside the correct runs of the
    // same splits.
    let rec = |split: u64, nll: f64, config: &str| {
        let Value::Object(r) = json!({"dataset": "energy", "method": "smi",
            "split_kind": "standard", "split": split, "config": config,
            "metrics": {"nll": nll, "rmse": 1.0, "nll_paper": nll, "rmse_paper": 1.0,
                        "seconds_per_step": 0.001, "steps": 100 * (split + 1)}})
        else {
            unreachable!()
        };
        r
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    for (split, nll) in [(0, 1.0), (1, 2.0), (2, 3.0)] {
        records::append(out, EXPERIMENT, rec(split, nll, "c|seed=0")).unwrap();
    }
    for (split, nll) in [(0, 5.0), (1, 7.0)] {
        let config = "c|defect=no-chain-rule|seed=0";
        records::append(out, EXPERIMENT, rec(split, nll, config)).unwrap();
    }
    for (split, nll) in [(0, 0.5), (1, 0.5), (2, 0.5)] {
        let config = "c|m=10|ablation|seed=0";
        records::append(out, EXPERIMENT, rec(split, nll, config)).unwrap();
    }
    report(out).unwrap();
    let md = std::fs::read_to_string(out.join("uci.md")).unwrap();
    let beside = &md[md.find("## Beside the paper").unwrap()..md.find("## Paper metrics").unwrap()];
    assert!(
        beside.contains("| energy | SMI | 3 | 2.00 ± 0.82 |"),
        "{beside}"
    );
    let defects = &md[md.find("## Reproduced NumPyro defects").unwrap()..];
    assert!(
        defects.contains(
            "| standard | energy | SMI | `defect=no-chain-rule` | 0, 1 | 150 | 6.00 ± 1.00 | \
             1.50 ± 0.50 |"
        ),
        "{defects}"
    );
    let ablations = &md[md.find("## Ablations of the paper's settings").unwrap()..];
    assert!(
        ablations.contains(
            "| standard | energy | SMI | `m=10` | 0, 1, 2 | 200 | 0.500 ± 0.000 | 2.00 ± 0.82 |"
        ),
        "{ablations}"
    );
}

#[test]
fn an_ablation_changes_smi_only_and_is_marked() {
    let p = Plan::new(&args(&[])).unwrap();
    let paper_values = Plan::new(&args(&["--particles", "5", "--init-scale", "0.1"])).unwrap();
    let m10 = Plan::new(&args(&["--particles", "10"])).unwrap();
    let knobs = Plan::new(&args(&[
        "--init-scale",
        "0.01",
        "--loss-temperature",
        "0.5",
        "--elbo-draws",
        "20",
    ]))
    .unwrap();
    let short = Plan::new(&args(&["--ablation", "--max-steps", "5000"])).unwrap();
    for m in Method::ALL {
        let c = p.config(m, Some(1e-3));
        // the paper's values given explicitly are no ablation
        assert_eq!(c, paper_values.config(m, Some(1e-3)), "{m}");
        assert_eq!(paper_values.file_tag(m), "");
        for q in [&m10, &knobs] {
            assert_eq!(c == q.config(m, Some(1e-3)), m != Method::Smi, "{m}");
            assert_eq!(q.file_tag(m).is_empty(), m != Method::Smi, "{m}");
        }
    }
    assert_eq!(
        knobs.config(Method::Smi, Some(5e-4)),
        "lr=5e-4|steps<=60000|es=35x2|m=5|S=20|b=100|init=U0.1|pred=5000|scale0=0.01|tau=0.5|\
         ablation|seed=0"
    );
    assert!(short
        .config(Method::Smi, None)
        .ends_with("|ablation|seed=0"));
    // ablations of one unit keep their states apart
    assert_ne!(m10.file_tag(Method::Smi), knobs.file_tag(Method::Smi));
    // the engine sees them: m for SMI only, the guide's init scale and τ
    let s = knobs.method_settings(100, Method::Smi);
    assert_eq!(s.loss_temperature, 0.5);
    assert_eq!(
        s.guide,
        Some(smi::GuideSettings::Normal { init_scale: 0.01 })
    );
    assert_eq!(m10.method_settings(100, Method::Svgd).num_particles, 5);
    assert_eq!(m10.method_settings(100, Method::Smi).num_particles, 10);
    assert!(Plan::new(&args(&["--init-scale", "0"])).is_err());
    assert!(Plan::new(&args(&["--loss-temperature", "nan"])).is_err());
    assert!(Plan::new(&args(&["--particles", "0"])).is_err());
    // a constant bandwidth factor: in the config, and SMI's kernel (only SMI's)
    let bw = Plan::new(&args(&["--bandwidth-factor", "0.01"])).unwrap();
    assert!(bw
        .config(Method::Smi, Some(5e-4))
        .ends_with("|pred=5000|bw=0.01|ablation|seed=0"));
    assert_eq!(
        bw.method_settings(100, Method::Smi).kernel,
        Some(smi::kernel::KernelSettings::Rbf {
            mode: smi::kernel::Mode::Norm,
            bandwidth_factor: smi::kernel::BandwidthFactor::Constant(0.01),
        })
    );
    assert_eq!(bw.method_settings(100, Method::Svgd).kernel, None);
    assert_ne!(bw.file_tag(Method::Smi), m10.file_tag(Method::Smi));
    assert!(Plan::new(&args(&["--bandwidth-factor", "0"])).is_err());
    // without early stopping: SMI's config and engine, not the others'
    let off = Plan::new(&args(&["--no-early-stopping"])).unwrap();
    assert_eq!(
        off.config(Method::Smi, Some(5e-3)),
        "lr=5e-3|steps=60000|es=off|m=5|S=100|b=100|init=U0.1|pred=5000|ablation|seed=0"
    );
    assert!(!off.method_settings(100, Method::Smi).early_stopping);
    assert!(off.method_settings(100, Method::Svgd).early_stopping);
    assert_eq!(
        off.config(Method::Svgd, Some(5e-3)),
        m10.config(Method::Svgd, Some(5e-3))
    );
    assert_ne!(off.file_tag(Method::Smi), short.file_tag(Method::Smi));
    // a factor on the scales' learning rate: SMI's config and engine only
    let c = Plan::new(&args(&["--scale-lr-factor", "10"])).unwrap();
    assert!(c
        .config(Method::Smi, Some(5e-4))
        .ends_with("|pred=5000|scale_lr=10|ablation|seed=0"));
    assert_eq!(c.method_settings(100, Method::Smi).scale_lr_factor, 10.0);
    assert_eq!(c.method_settings(100, Method::Svgd).scale_lr_factor, 1.0);
    assert!(Plan::new(&args(&["--scale-lr-factor", "0"])).is_err());
}

/// A small regression set, prepared as a unit's split is: 3 inputs, 60 training rows, 20 test.
fn small_split() -> Prepared {
    let (cols, n) = (3, 80);
    let mut x = Vec::with_capacity(n * cols);
    let mut y = Vec::with_capacity(n);
    for i in 0..n {
        let t = i as f64;
        let (a, b, c) = ((0.37 * t).sin(), (0.11 * t).cos(), (i % 7) as f64 / 7.0);
        x.extend([a, b, c]);
        y.push(2.0 * a - b + 0.5 * c + 0.02 * ((i * 13 % 11) as f64 - 5.0));
    }
    let split = Split {
        train: (0..60).collect(),
        test: (60..80).collect(),
    };
    smi_data::prepare(&x, &y, cols, &split).unwrap()
}

#[test]
fn an_interrupted_unit_continues_to_the_same_result() {
    let plan = Plan {
        progress: false,
        ..Plan::new(&args(&["--quick", "--max-steps", "60"])).unwrap()
    };
    let prep = small_split();
    let (method, lr, seed) = (Method::Smi, Some(1e-2), 3);
    let dir = tempfile::tempdir().unwrap();
    let ckpt = FitCheckpoint::in_folder(dir.path(), "unit").every(20);
    let unit = |ckpt: Option<&FitCheckpoint>| {
        fit_and_evaluate(method, lr, &prep, &plan, seed, "t", ckpt).unwrap()
    };
    let bits = |f: &Fit| {
        [f.rmse, f.nll, f.rmse_paper, f.nll_paper]
            .map(f64::to_bits)
            .to_vec()
    };
    let plain = unit(None);
    let whole = unit(Some(&ckpt));
    assert_eq!(
        whole.steps, 60,
        "the early-stopping rule did not end the fit"
    );
    assert_eq!(bits(&whole), bits(&plain), "saving changes nothing");
    assert!(!ckpt.path.exists(), "a finished unit leaves no state");

    // the state of the same fit stopped at step 40, as an interrupted unit leaves it
    let settings = plan.method_settings(prep.y_train.len(), method);
    let engine_settings = settings.method_settings(method, lr, seed).unwrap();
    let model = BnnRegression::uci(matrix(&prep.x_train).unwrap(), prep.y_train.clone()).unwrap();
    let engine = engine_settings.build(&model).unwrap();
    let interrupted = smi::RunSettings {
        max_steps: 40,
        checkpoint: Some(ckpt.path.clone()),
        checkpoint_every: 20,
        ..settings.run_settings(method)
    };
    let state = engine.init().unwrap();
    smi::run(engine.as_ref(), state, &interrupted, &mut NoObserver).unwrap();
    let resumed = unit(Some(&ckpt));
    assert_eq!(resumed.steps, 60);
    assert_eq!(
        bits(&resumed),
        bits(&whole),
        "the continued unit runs the same steps"
    );
    assert!(!ckpt.path.exists());

    // the saved state is what the unit continues from: move it and the result moves
    smi::run(
        engine.as_ref(),
        engine.init().unwrap(),
        &interrupted,
        &mut NoObserver,
    )
    .unwrap();
    let mut state = engine.load_state(&ckpt.path).unwrap();
    state.particles.as_mut_slice()[0] += 0.5;
    state.save(&ckpt.path).unwrap();
    assert_ne!(bits(&unit(Some(&ckpt))), bits(&whole));
}

#[test]
fn standardised_targets_are_a_marked_variant_of_every_method() {
    let plan = Plan::new(&args(&["--standardize-y"])).unwrap();
    let paper = Plan::new(&args(&[])).unwrap();
    for m in [Method::Smi, Method::Svgd, Method::Ovi, Method::Map] {
        let c = plan.config(m, Some(5e-4));
        assert!(c.ends_with("|y=std|seed=0"), "{c}");
        assert!(super::report::is_ablation(&c), "{c}");
        assert!(!super::report::is_ablation(&paper.config(m, Some(5e-4))));
        assert_eq!(plan.file_tag(m), "-ystd", "{m}");
    }
}

#[test]
fn a_fit_on_standardised_targets_predicts_in_the_units_of_y() {
    // MAP on a small split, y as is and y·2⁻¹⁰: scaling by a power of two is exact, so both
    // fits see the same standardised y bit for bit; the predictions come back in y's units,
    // so the RMSE scales by 2⁻¹⁰ exactly and the NLL shifts by ln 2⁻¹⁰ (up to rounding).
    let prep = small_split();
    let plan = Plan::new(&args(&["--standardize-y", "--quick"])).unwrap();
    let c = 2f64.powi(-10);
    let mut scaled = prep.clone();
    for y in scaled.y_train.iter_mut().chain(scaled.y_test.iter_mut()) {
        *y *= c;
    }
    let fit = |p: &Prepared| {
        super::fit_and_evaluate(Method::Map, Some(1e-2), p, &plan, 3, "t", None).unwrap()
    };
    let (a, b) = (fit(&prep), fit(&scaled));
    assert_eq!(b.rmse, a.rmse * c, "{} {}", a.rmse, b.rmse);
    // the NLL's sums in y's units round differently: measured 8.9e-16 apart; 1e-12 leaves
    // room for another order of summation and catches any real difference
    assert!(
        (b.nll - (a.nll + c.ln())).abs() < 1e-12,
        "{} {}",
        a.nll,
        b.nll
    );
    // without --standardize-y the fit sees the scale and ends elsewhere
    let raw = Plan::new(&args(&["--quick"])).unwrap();
    let raw_fit = |p: &Prepared| {
        super::fit_and_evaluate(Method::Map, Some(1e-2), p, &raw, 3, "t", None).unwrap()
    };
    assert_ne!(raw_fit(&scaled).rmse, raw_fit(&prep).rmse * c);
}
