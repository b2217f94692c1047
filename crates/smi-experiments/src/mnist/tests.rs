//! Unit tests.

use super::report::cell;
use super::*;

#[test]
fn options_parse() {
    assert_eq!(parse_layers("both").unwrap(), vec![1, 2]);
    assert_eq!(parse_layers("2,1,2").unwrap(), vec![1, 2]);
    assert!(parse_layers("3").is_err());
    assert_eq!(
        parse_methods("smi, MAP,smi").unwrap(),
        vec![Method::Smi, Method::Map]
    );
    assert_eq!(parse_methods("all").unwrap(), Method::VARIATIONAL.to_vec());
    assert!(parse_methods("nuts").is_err());
    assert_eq!(adagrad_lr(1), 0.7);
    assert_eq!(adagrad_lr(2), 0.8);
}

#[test]
fn steps_per_epoch_drop_the_remainder() {
    let args = Args {
        layers: None,
        epochs: None,
        methods: None,
        draws: None,
        elbo_draws: None,
        particles: None,
        loss_temperature: None,
        init_scale: None,
        scale_lr_factor: None,
        lr: None,
        max_steps_per_epoch: None,
        train_size: None,
        test_size: None,
        data_dir: None,
        out: PathBuf::from("x"),
        seed: PAPER_SEED,
        resume: true,
        attraction: AttractionNorm::Paper,
        defect: None,
        device: "cpu".into(),
        quick: false,
    };
    let plan = Plan::new(&args).unwrap();
    assert_eq!(plan.steps_per_epoch(60_000), 468);
    assert_eq!(plan.layers, vec![1, 2]);
    let cut = Plan::new(&Args {
        max_steps_per_epoch: Some(10),
        ..args.clone()
    })
    .unwrap();
    assert_eq!(cut.steps_per_epoch(60_000), 10);
    // --particles: SMI's m in its key and file names
    let m1 = Plan::new(&Args {
        particles: Some(1),
        ..args.clone()
    })
    .unwrap();
    assert!(m1.train_key(1, Method::Smi, 60_000).contains(" m=1 S=55 "));
    assert_eq!(m1.file_tag(Method::Smi), "-m=1");
    assert_eq!(plan.file_tag(Method::Smi), "");
    assert!(m1.train_key(1, Method::Svgd, 60_000).contains("m=5 "));
    assert!(Plan::new(&Args {
        particles: Some(0),
        ..args.clone()
    })
    .is_err());
    // --device: a bad name lists the valid ones; a GPU runs SMI only, or needs the feature
    let bad = Plan::new(&Args {
        device: "tpu".into(),
        ..args.clone()
    });
    assert!(bad.err().unwrap().to_string().contains("cuda:N"));
    let gpu = |methods: &str| {
        Plan::new(&Args {
            device: "cuda".into(),
            methods: Some(methods.into()),
            ..args.clone()
        })
    };
    let e = gpu("smi,ovi").err().unwrap().to_string();
    let want = if smi_models::Device::CUDA_BUILT {
        "runs smi"
    } else {
        "--features cuda"
    };
    assert!(e.contains(want), "{e}");
    if smi_models::Device::CUDA_BUILT {
        let plan = gpu("smi").unwrap();
        assert!(plan
            .train_key(1, Method::Smi, 60_000)
            .ends_with(&format!("device=cuda seed={PAPER_SEED}")));
        assert_eq!(plan.file_tag(Method::Smi), "-device=cuda");
    }
    assert!(Plan::new(&Args {
        train_size: Some(100),
        ..args.clone()
    })
    .is_err());
    // The checkpoint key ignores the epoch count except for ASVGD.
    let more = Plan::new(&Args {
        epochs: Some(3),
        ..args.clone()
    })
    .unwrap();
    // the NumPyro attraction is a different SMI training (not a different SVGD one), and
    // the default adds nothing to the key
    let numpyro = Plan::new(&Args {
        attraction: AttractionNorm::Numpyro,
        ..args.clone()
    })
    .unwrap();
    // SMI's initial scale and rate enter its key and file names, not SVGD's
    let scaled = Plan::new(&Args {
        init_scale: Some(0.01),
        ..args.clone()
    })
    .unwrap();
    let slow = Plan::new(&Args {
        lr: Some(0.35),
        ..args.clone()
    })
    .unwrap();
    assert!(scaled
        .train_key(1, Method::Smi, 60_000)
        .contains("normal(init=uniform(2),scale=0.01)"));
    assert!(slow
        .train_key(1, Method::Smi, 60_000)
        .contains("adagrad(0.35)"));
    assert!(slow
        .train_key(1, Method::Svgd, 60_000)
        .contains("adagrad(0.7)"));
    assert_eq!(scaled.file_tag(Method::Smi), "-scale0=0.01");
    assert_eq!(slow.file_tag(Method::Smi), "-lr=0.35");
    assert_eq!(slow.file_tag(Method::Svgd), "");
    assert!(Plan::new(&Args {
        init_scale: Some(0.0),
        ..args.clone()
    })
    .is_err());
    assert!(Plan::new(&Args {
        lr: Some(f64::NAN),
        ..args.clone()
    })
    .is_err());
    // so is the double-transform switch, named in the key
    let twice = Plan::new(&Args {
        defect: Some(smi::NumpyroDefect::DoubleTransform),
        ..args
    })
    .unwrap();
    let key = |p: &Plan, m| p.train_key(1, m, 60_000);
    assert_ne!(key(&plan, Method::Smi), key(&numpyro, Method::Smi));
    assert_eq!(key(&plan, Method::Svgd), key(&numpyro, Method::Svgd));
    assert!(!key(&plan, Method::Smi).contains("attraction"));
    assert!(key(&twice, Method::Smi).contains(" defect=double-transform"));
    assert_eq!(key(&plan, Method::Svgd), key(&twice, Method::Svgd));
    assert!(!key(&plan, Method::Smi).contains("defect"));
    assert_eq!(key(&plan, Method::Smi), key(&more, Method::Smi));
    assert_ne!(key(&plan, Method::Asvgd), key(&more, Method::Asvgd));
    assert_ne!(
        plan.config(1, Method::Smi, 60_000, 10_000),
        more.config(1, Method::Smi, 60_000, 10_000)
    );
}

#[test]
fn absurd_draw_counts_are_refused() {
    let gib = 1u64 << 30;
    let all = Method::VARIATIONAL;
    // The paper's settings fit in a few GiB.
    assert!(check_sizes(&[1, 2], &all, 50, (SMI_ELBO_DRAWS, PARTICLES), 4 * gib).is_ok());
    for (draws, elbo, flag) in [
        (1_000_000_000, SMI_ELBO_DRAWS, "--draws"),
        (usize::MAX, SMI_ELBO_DRAWS, "--draws"),
        (50, 1_000_000_000, "--elbo-draws"),
    ] {
        let e = check_sizes(&[1, 2], &all, draws, (elbo, PARTICLES), 128 * gib).unwrap_err();
        assert!(e.to_string().contains(flag), "{e}");
    }
    // MAP keeps every draw's metrics; SVGD/ASVGD use their particles whatever --draws says.
    assert!(check_sizes(
        &[1],
        &[Method::Map],
        1_000_000_000,
        (55, PARTICLES),
        128 * gib
    )
    .is_err());
    assert!(check_sizes(&[1], &[Method::Svgd], usize::MAX, (55, PARTICLES), gib).is_ok());
    assert_eq!(network_dim(1), 79_510);
    assert_eq!(network_dim(2), 89_610);
}

#[test]
fn paper_style_cells() {
    assert_eq!(
        cell(MeanStd {
            mean: 0.9791,
            std: 0.0012
        }),
        ".979 ± .001"
    );
    assert_eq!(
        cell(MeanStd {
            mean: 1.5,
            std: 0.25
        }),
        "1.500 ± .250"
    );
}

#[test]
fn the_report_puts_ours_beside_the_paper() {
    // Per-draw accuracies 0.95 and 0.96 (.955 ± .005), a mean-only NLL, CPU time 0.5 s per
    // step over 7 200 steps = 1 h; SVGD from a binary without CPU time.
    let Value::Object(smi) = json!({"layers": 1, "method": "smi", "epochs": 3, "steps": 7200,
        "config": "c",
        "metrics": {"nll": 0.05, "ece": 0.1, "cpu_seconds_per_step": 0.5,
                    "per_draw": {"acc": [0.95, 0.96]}}})
    else {
        unreachable!()
    };
    let Value::Object(svgd) = json!({"layers": 2, "method": "svgd", "epochs": 1, "steps": 10,
        "config": "c", "metrics": {"acc": 0.9, "nll": 0.2, "ece": 0.2}})
    else {
        unreachable!()
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    records::append(out, EXPERIMENT, smi).unwrap();
    records::append(out, EXPERIMENT, svgd).unwrap();
    report(out).unwrap();
    let md = std::fs::read_to_string(out.join("mnist.md")).unwrap();
    let section = &md[md.find("## Beside the paper").unwrap()..md.find("## Runs").unwrap()];
    // the paper's 1-layer SMI: Acc .957 ± .003, NLL .039 ± .003, ECE .148 ± .012 (§9.3)
    assert!(
        section.contains(
            "| SMI | 3 | .955 ± .005 | .957 ± .003 | .050 ± .000 | .039 ± .003 | .100 ± .000 | \
             .148 ± .012 | 1.00 |"
        ),
        "{section}"
    );
    assert!(section.contains("### 2 hidden layers"), "{section}");
    assert!(
        section.contains("| SVGD | 1 | .900 ± .000 | .940 ± .002 |"),
        "{section}"
    );
    assert!(section.contains(".135 ± .013 | – |"), "{section}");
}

#[test]
fn runs_of_another_length_get_tables_of_their_own() {
    // A 100-epoch SMI run, then a later 20-epoch SMI and MAP: the 20-epoch runs are compared
    // with each other, and the paper's table keeps the 100-epoch SMI although it is older.
    let rec = |method: &str, epochs: u64, acc: f64| {
        let Value::Object(r) = json!({"layers": 1, "method": method, "epochs": epochs,
            "train_size": 60000, "steps": epochs * 468, "config": "c",
            "metrics": {"acc": acc, "nll": 0.1}})
        else {
            unreachable!()
        };
        r
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    records::append(out, EXPERIMENT, rec("smi", 100, 0.93)).unwrap();
    records::append(out, EXPERIMENT, rec("smi", 20, 0.92)).unwrap();
    records::append(out, EXPERIMENT, rec("map", 20, 0.96)).unwrap();
    report(out).unwrap();
    let md = std::fs::read_to_string(out.join("mnist.md")).unwrap();
    let at = |h: &str| md.find(h).unwrap_or_else(|| panic!("no {h:?} in {md}"));
    let long = &md[at("## 1-hidden-layer network, 100 epochs on 60 000 images, paper metrics")
        ..at("## 1-hidden-layer network, 100 epochs on 60 000 images, standard metrics")];
    assert!(
        long.contains("| SMI |") && long.contains(".930 ± .000"),
        "{long}"
    );
    assert!(!long.contains("| MAP |"), "{long}");
    let short = &md[at("## 1-hidden-layer network, 20 epochs on 60 000 images, paper metrics")
        ..at("## 1-hidden-layer network, 20 epochs on 60 000 images, standard metrics")];
    assert!(short.contains(".920 ± .000"), "{short}");
    assert!(short.contains("| MAP |"), "{short}");
    assert!(!short.contains(".930"), "{short}");
    // the longer run's tables come first
    assert!(at("100 epochs on 60 000 images, paper") < at("20 epochs on 60 000 images, paper"));
    let beside = &md[at("## Beside the paper")..at("## Runs")];
    assert!(beside.contains("| SMI | 100 | .930 ± .000 |"), "{beside}");
    assert!(beside.contains("| MAP | 20 | .960 ± .000 |"), "{beside}");
    let configs = &md[at("## Configurations")..];
    assert!(
        configs.contains("- 1-layer SMI, 100 epochs: `c`"),
        "{configs}"
    );
    assert!(
        configs.contains("- 1-layer SMI, 20 epochs: `c`"),
        "{configs}"
    );
}

#[test]
fn a_run_with_a_reproduced_defect_or_a_variant_does_not_stand_for_its_method() {
    // A correct SMI record, then later ones with the double-transform defect and with NumPyro's
    // attraction alone: the tables keep the correct one, the others get sections of their own.
    let rec = |acc: f64, config: &str| {
        let Value::Object(r) = json!({"layers": 1, "method": "smi", "epochs": 20, "steps": 9360,
            "config": config, "metrics": {"acc": acc, "nll": 0.1}})
        else {
            unreachable!()
        };
        r
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    records::append(out, EXPERIMENT, rec(0.93, "c")).unwrap();
    records::append(out, EXPERIMENT, rec(0.96, "c defect=double-transform")).unwrap();
    records::append(out, EXPERIMENT, rec(0.97, "c attraction=numpyro")).unwrap();
    report(out).unwrap();
    let md = std::fs::read_to_string(out.join("mnist.md")).unwrap();
    let section = &md[md.find("## Beside the paper").unwrap()..md.find("## Reproduced").unwrap()];
    assert!(section.contains("| SMI | 20 | .930 ± .000 |"), "{section}");
    let defects = &md[md.find("## Reproduced NumPyro defects").unwrap()
        ..md.find("## Variants of the paper's settings").unwrap()];
    assert!(defects.contains("| 1 | smi |"), "{defects}");
    assert!(defects.contains(".960 ± .000"), "{defects}");
    assert!(!defects.contains(".970 ± .000"), "{defects}");
    let variants = &md[md.find("## Variants of the paper's settings").unwrap()..];
    assert!(variants.contains(".970 ± .000"), "{variants}");
}

#[test]
fn variants_keep_their_state_files_apart() {
    let plan = |extra: &[&str]| Plan::new(&crate::parse_args::<Args>(extra)).unwrap();
    assert_eq!(plan(&[]).file_tag(Method::Smi), "");
    assert_eq!(
        plan(&["--attraction", "numpyro"]).file_tag(Method::Smi),
        "-attraction=numpyro"
    );
    let both = plan(&["--attraction", "numpyro", "--defect", "double-transform"]);
    assert_eq!(
        both.file_tag(Method::Smi),
        "-attraction=numpyro-defect=double-transform"
    );
    assert_eq!(both.file_tag(Method::Map), "");
    let cold = plan(&["--loss-temperature", "10"]);
    assert_eq!(cold.file_tag(Method::Smi), "-tau=10");
    assert!(cold
        .train_key(1, Method::Smi, 60_000)
        .contains("scale=0.1) tau=10 seed="));
    assert!(!cold.train_key(1, Method::Svgd, 60_000).contains("tau="));
    assert!(Plan::new(&crate::parse_args::<Args>(&["--loss-temperature", "0"])).is_err());
    assert_eq!(plan(&["--elbo-draws", "10"]).file_tag(Method::Smi), "-S=10");
    assert_eq!(plan(&["--quick"]).file_tag(Method::Smi), "");
    assert_eq!(
        plan(&["--quick", "--elbo-draws", "55"]).file_tag(Method::Smi),
        "-S=55"
    );
    let scales = plan(&["--scale-lr-factor", "0.1"]);
    assert_eq!(scales.file_tag(Method::Smi), "-scale_lr=0.1");
    assert!(scales
        .train_key(1, Method::Smi, 60_000)
        .contains("scale=0.1) scale_lr=0.1 seed="));
    assert!(!scales
        .train_key(1, Method::Svgd, 60_000)
        .contains("scale_lr="));
    assert!(!plan(&[])
        .train_key(1, Method::Smi, 60_000)
        .contains("scale_lr="));
    assert!(Plan::new(&crate::parse_args::<Args>(&["--scale-lr-factor", "0"])).is_err());
}

#[test]
fn variants_of_the_paper_settings_are_recognised() {
    use super::report::is_variant;
    let paper = "layers=1 width=100 tanh prior=N(0,1) train=60000 batch=128 steps_per_epoch=468 \
                 shuffle=chacha8(seed,epoch) adagrad(0.7) m=5 S=55 normal(init=uniform(2),scale=0.1) \
                 seed=142 epochs=100 draws=50 test=10000";
    assert!(!is_variant(paper));
    assert!(is_variant(&paper.replace("m=5 S=55", "m=1 S=55")));
    assert!(is_variant(&paper.replace("m=5 S=55", "m=5 S=10")));
    // a quick run's S = 10 is its mode's default
    assert!(!is_variant(
        &paper
            .replace("train=60000", "train=512")
            .replace("m=5 S=55", "m=5 S=10")
    ));
    assert!(is_variant(
        &paper.replace(" seed=142", " attraction=numpyro seed=142")
    ));
    assert!(is_variant(
        &paper.replace(" seed=142", " device=cuda seed=142")
    ));
    assert!(is_variant(&paper.replace(" seed=142", " tau=10 seed=142")));
    assert!(is_variant(
        &paper.replace(" seed=142", " scale_lr=0.1 seed=142")
    ));
    assert!(is_variant(&paper.replace("scale=0.1)", "scale=0.01)")));
    assert!(is_variant(&paper.replace("adagrad(0.7)", "adagrad(0.35)")));
    // the paper's rate of two layers is not a variant there
    assert!(!is_variant(
        &paper
            .replace("layers=1", "layers=2")
            .replace("adagrad(0.7)", "adagrad(0.8)")
    ));
    // SVGD's m is not SMI's
    assert!(!is_variant("m=5 delta(init=median15) seed=142"));
}
