//! Bad settings and bad input give typed errors naming the problem, never panics.

use smi::testing::{BayesLinReg, DiagNormal};
use smi::{
    Engine, Error, FnDensity, LogDensity, Matrix, NonFinitePolicy, OptimizerSettings,
    SteinSettings, SteinVi, Svi, SviSettings,
};

fn field_of(e: Error) -> &'static str {
    match e {
        Error::InvalidSettings { field, .. } => field,
        other => panic!("expected InvalidSettings, got {other:?}"),
    }
}

/// The field named by the error of `SteinVi::new(model, settings)`, which must fail with
/// [`Error::InvalidSettings`].
fn stein_field<M: LogDensity + ?Sized>(model: &M, settings: SteinSettings) -> &'static str {
    field_of(SteinVi::new(model, settings).err().expect("must fail"))
}

/// As [`stein_field`], for `Svi::new`.
fn svi_field<M: LogDensity + ?Sized>(model: &M, settings: SviSettings) -> &'static str {
    field_of(Svi::new(model, settings).err().expect("must fail"))
}

#[test]
fn invalid_settings_name_their_field() {
    let t = DiagNormal::standard(2).unwrap();
    // Each case changes one field of `SteinSettings::smi()`.
    type Change = fn(&mut SteinSettings);
    let cases: [(Change, &str); 7] = [
        (|s| s.num_particles = 0, "num_particles"),
        (|s| s.num_elbo_particles = 0, "num_elbo_particles"),
        (|s| s.optimizer = OptimizerSettings::adam(-0.1), "lr"),
        (
            |s| s.repulsion_temperature = f64::NAN,
            "repulsion_temperature",
        ),
        (|s| s.batch_size = Some(0), "batch_size"),
        (|s| s.jacobian = false, "jacobian"),
        (
            |s| s.init = smi::Init::Uniform { radius: 0.0 },
            "init radius",
        ),
    ];
    for (change, field) in cases {
        let mut s = SteinSettings::smi();
        change(&mut s);
        assert_eq!(stein_field(&t, s), field);
    }
    let mut o = SviSettings::ovi();
    o.num_elbo_particles = 0;
    assert_eq!(svi_field(&t, o), "num_elbo_particles");
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
    let mut s = SteinSettings::smi();
    s.batch_size = Some(6);
    assert_eq!(stein_field(&m, s), "batch_size");
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
