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
        max_steps_per_epoch: None,
        train_size: None,
        test_size: None,
        data_dir: None,
        out: PathBuf::from("x"),
        seed: PAPER_SEED,
        resume: true,
        attraction: AttractionNorm::Paper,
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
        ..args
    })
    .unwrap();
    let key = |p: &Plan, m| p.train_key(1, m, 60_000);
    assert_ne!(key(&plan, Method::Smi), key(&numpyro, Method::Smi));
    assert_eq!(key(&plan, Method::Svgd), key(&numpyro, Method::Svgd));
    assert!(!key(&plan, Method::Smi).contains("attraction"));
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
    assert!(check_sizes(&[1, 2], &all, 50, SMI_ELBO_DRAWS, 4 * gib).is_ok());
    for (draws, elbo, flag) in [
        (1_000_000_000, SMI_ELBO_DRAWS, "--draws"),
        (usize::MAX, SMI_ELBO_DRAWS, "--draws"),
        (50, 1_000_000_000, "--elbo-draws"),
    ] {
        let e = check_sizes(&[1, 2], &all, draws, elbo, 128 * gib).unwrap_err();
        assert!(e.to_string().contains(flag), "{e}");
    }
    // MAP keeps every draw's metrics; SVGD/ASVGD use their particles whatever --draws says.
    assert!(check_sizes(&[1], &[Method::Map], 1_000_000_000, 55, 128 * gib).is_err());
    assert!(check_sizes(&[1], &[Method::Svgd], usize::MAX, 55, gib).is_ok());
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
