//! Bad settings and bad input give typed errors naming the problem, never panics.

use smi::testing::{BayesLinReg, DiagNormal};
use smi::{
    Engine, Error, FnDensity, Matrix, NonFinitePolicy, OptimizerSettings, SteinSettings, SteinVi,
    Svi, SviSettings,
};

fn field_of(e: Error) -> &'static str {
    match e {
        Error::InvalidSettings { field, .. } => field,
        other => panic!("expected InvalidSettings, got {other:?}"),
    }
}

#[test]
fn invalid_settings_name_their_field() {
    let t = DiagNormal::standard(2).unwrap();
    let cases: Vec<(SteinSettings, &str)> = vec![
        (
            SteinSettings {
                num_particles: 0,
                ..SteinSettings::smi()
            },
            "num_particles",
        ),
        (
            SteinSettings {
                num_elbo_particles: 0,
                ..SteinSettings::smi()
            },
            "num_elbo_particles",
        ),
        (
            SteinSettings {
                optimizer: OptimizerSettings::adam(-0.1),
                ..SteinSettings::smi()
            },
            "lr",
        ),
        (
            SteinSettings {
                repulsion_temperature: f64::NAN,
                ..SteinSettings::smi()
            },
            "repulsion_temperature",
        ),
        (
            SteinSettings {
                batch_size: Some(0),
                ..SteinSettings::smi()
            },
            "batch_size",
        ),
        (
            SteinSettings {
                jacobian: false,
                ..SteinSettings::smi()
            },
            "jacobian",
        ),
        (
            SteinSettings {
                init: smi::Init::Uniform { radius: 0.0 },
                ..SteinSettings::smi()
            },
            "init radius",
        ),
    ];
    for (s, field) in cases {
        let err = SteinVi::new(&t, s).err().expect("must fail");
        assert_eq!(field_of(err), field);
    }
    let err = Svi::new(
        &t,
        SviSettings {
            num_elbo_particles: 0,
            ..SviSettings::ovi()
        },
    )
    .err()
    .unwrap();
    assert_eq!(field_of(err), "num_elbo_particles");
}

#[test]
fn data_with_nan_names_the_row() {
    let mut x = Matrix::zeros(5, 2);
    x.set(3, 1, f64::NAN);
    match BayesLinReg::new(x, vec![0.0; 5], 1.0, 1.0) {
        Err(Error::Data(msg)) => assert!(msg.contains("row 3"), "{msg}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn batch_larger_than_data_is_rejected() {
    let m = BayesLinReg::new(
        Matrix::from_fn(5, 1, |i, _| i as f64),
        vec![0.0; 5],
        1.0,
        1.0,
    )
    .unwrap();
    let err = SteinVi::new(
        &m,
        SteinSettings {
            batch_size: Some(6),
            ..SteinSettings::smi()
        },
    )
    .err()
    .unwrap();
    assert_eq!(field_of(err), "batch_size");
}

#[test]
fn a_state_from_another_model_is_a_shape_error() {
    let small = DiagNormal::standard(2).unwrap();
    let big = DiagNormal::standard(3).unwrap();
    let e_small = SteinVi::new(&small, SteinSettings::smi()).unwrap();
    let e_big = SteinVi::new(&big, SteinSettings::smi()).unwrap();
    let mut st = e_small.init().unwrap();
    assert!(matches!(
        e_big.step(&mut st, None),
        Err(Error::Shape { .. })
    ));
}

#[test]
fn non_finite_steps_are_skipped_or_reported() {
    // log p = −∞ away from a small region: every step is non-finite.
    let bad = FnDensity::new(1, |x: &[f64], g: &mut [f64]| {
        g[0] = f64::NAN;
        if x[0].abs() < 1e-9 {
            0.0
        } else {
            f64::NEG_INFINITY
        }
    });
    let e = SteinVi::new(&bad, SteinSettings::smi()).unwrap();
    let mut st = e.init().unwrap();
    let before = st.particles.clone();
    let info = e.step(&mut st, None).unwrap();
    assert!(info.skipped);
    assert_eq!(
        st.particles, before,
        "a skipped step leaves the particles unchanged"
    );
    assert_eq!((st.step, st.skipped_steps), (1, 1));

    let e = SteinVi::new(
        &bad,
        SteinSettings {
            on_non_finite: NonFinitePolicy::Error,
            ..SteinSettings::smi()
        },
    )
    .unwrap();
    let mut st = e.init().unwrap();
    assert!(matches!(
        e.step(&mut st, None),
        Err(Error::NonFinite { .. })
    ));

    let e = Svi::new(&bad, SviSettings::ovi()).unwrap();
    let mut st = e.init().unwrap();
    assert!(e.step(&mut st, None).unwrap().skipped);
}

#[test]
fn prior_median_init_needs_a_model_that_samples_its_prior() {
    let no_prior = FnDensity::new(1, |x: &[f64], g: &mut [f64]| {
        g[0] = -x[0];
        -0.5 * x[0] * x[0]
    });
    let e = SteinVi::new(&no_prior, SteinSettings::svgd()).unwrap();
    assert!(matches!(e.init(), Err(Error::Unsupported(_))));
    // A model that can sample its prior initialises every particle differently.
    let t = DiagNormal::standard(3).unwrap();
    let e = SteinVi::new(&t, SteinSettings::svgd()).unwrap();
    let st = e.init().unwrap();
    assert_ne!(st.particles.row(0), st.particles.row(1));
}
