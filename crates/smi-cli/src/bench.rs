//! `smi bench`: the time of one engine step on named configurations with synthetic data.
//!
//! A step is everything [`smi::Engine::step`] does: draw noise and mini-batches, evaluate the
//! model (forward + backward) on every draw, the mixture density and Stein force (Stein
//! engines), and the optimizer update. Each measurement runs `--warmup` untimed steps, then
//! times every step separately and reports the median. The machine's GEMM peak is measured in
//! the same run: a square f32 faer matmul (n = 1024) on one core, sequential, best of 6.

use std::io::Write;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde::Serialize;
use smi::linalg::{gemm, Op};

use smi_experiments::bench::{parse_method, parse_reuse, reuse_name, Case, Config, Model};
use smi_models::Device;

/// Options of `smi bench`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Configuration: mvn-100, wave-100-1h, boston-1h, wave-100, boston, mnist-1.
    #[arg(long, required_unless_present = "all", conflicts_with = "all")]
    pub config: Option<String>,
    /// Method: smi, svgd, asvgd, ovi, map.
    #[arg(long, required_unless_present = "all", conflicts_with = "all")]
    pub method: Option<String>,
    /// Timed steps per measurement (default: at least 20, and at least --min-seconds of them).
    #[arg(long)]
    pub steps: Option<usize>,
    /// Untimed warm-up steps before the timed ones.
    #[arg(long, default_value_t = 5)]
    pub warmup: usize,
    /// With the default step count: keep stepping until this many seconds are timed (a finite
    /// number ≥ 0).
    #[arg(long, default_value_t = 1.0)]
    pub min_seconds: f64,
    /// Gradient reuse of the Stein engines: shared (m·S model draws per step) or per_pair
    /// (m²·S, what NumPyro does).
    #[arg(long, default_value = "shared", conflicts_with = "all")]
    pub reuse: String,
    /// S, the ELBO draws per particle (smi, ovi), instead of the configuration's default.
    #[arg(long, conflicts_with = "all")]
    pub draws: Option<usize>,
    /// m, the particles of the Stein engines (smi, svgd, asvgd), instead of the
    /// configuration's default (e.g. SVGD at the recovery experiment's m = 256).
    #[arg(long, conflicts_with = "all")]
    pub particles: Option<usize>,
    /// Run every line of the benchmark table (all configurations and methods).
    #[arg(long)]
    pub all: bool,
    /// Print the Markdown table of BENCHMARKS.md on stdout (the JSON lines go to stderr).
    #[arg(long)]
    pub markdown: bool,
    /// Measure each line this many times and keep the fastest median (noisy machines).
    #[arg(long, default_value_t = 1)]
    pub repeat: usize,
    /// Rayon worker threads, at least 1 (default: one per core).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Where the model work runs: cpu, or cuda / cuda:N (SMI on the BNN configurations; needs
    /// a build with `--features cuda`, an NVIDIA driver and a GPU; see docs/cuda.md).
    #[arg(long, default_value = "cpu")]
    pub device: String,
    /// With --device cuda: run the Stein update (kernel, φ, optimizer) on the host, as the GPU
    /// engine did before the particles stayed on the device; for before/after timings in one
    /// run. The JSON line's device reads `cuda+host-update`.
    #[arg(long)]
    pub host_update: bool,
    /// With --device cuda: after timing each line, run 20 more steps with a wait for the GPU
    /// after each phase, and print each phase's mean milliseconds to stderr (where a step's
    /// time goes; the waits make these steps slower than the timed ones).
    #[arg(long)]
    pub profile: bool,
}

/// One benchmark line (the JSON object printed per measurement).
#[derive(Serialize, Debug, Clone)]
pub struct Record {
    /// Configuration name.
    pub config: &'static str,
    /// Method name.
    pub method: &'static str,
    /// Median wall-clock milliseconds per step.
    pub ms_per_step: f64,
    /// Model GFLOP/s at the median: model flops per step / median time.
    pub gflops: f64,
    /// f32 GEMM GFLOP/s of one core (faer, sequential, n = 1024, best of 6), same run.
    pub gemm_peak_gflops: f64,
    /// Gradient reuse (`shared` / `per_pair`); `shared` for the SVI engines.
    pub reuse: &'static str,
    /// m, particles.
    pub m: usize,
    /// S, ELBO draws per particle.
    #[serde(rename = "S")]
    pub s: usize,
    /// K, model draws per step.
    #[serde(rename = "K")]
    pub k: usize,
    /// d, model parameters.
    pub d: usize,
    /// Data rows per draw (0: no data).
    pub rows_per_draw: usize,
    /// Timed steps.
    pub steps: usize,
    /// Fastest step, ms.
    pub ms_min: f64,
    /// Mean step, ms.
    pub ms_mean: f64,
    /// Model GFLOP per step (2 per multiply-add, backward = 2 × forward).
    pub model_gflop_per_step: f64,
    /// Mixture density + kernel GFLOP per step.
    pub other_gflop_per_step: f64,
    /// (model + other) flops / median time.
    pub gflops_total: f64,
    /// Steps the engine skipped for a non-finite value (they still did the model work).
    pub skipped_steps: u64,
    /// NumPyro ms per step on this configuration (`bench/references.json`), if known.
    pub numpyro_ms: Option<f64>,
    /// NumPyro ms / ours.
    pub speedup: Option<f64>,
    /// The target of this line in `bench/references.json`.
    pub target: Option<String>,
    /// Whether the target is met.
    pub target_met: Option<bool>,
    /// Rayon threads.
    pub threads: usize,
    /// 1-minute load average at the start of the measurement.
    pub load: Option<f64>,
    /// Where the model work ran (`cpu`, `cuda`, `cuda:N`).
    pub device: String,
}

/// Checks the numeric options before anything runs.
fn check_args(args: &Args) -> Result<()> {
    if args.threads == Some(0) {
        bail!("--threads must be at least 1 (leave it out for one thread per core)");
    }
    if !(args.min_seconds.is_finite() && args.min_seconds >= 0.0) {
        bail!(
            "--min-seconds must be a finite number of seconds ≥ 0, got {}",
            args.min_seconds
        );
    }
    if args.steps == Some(0) {
        bail!("--steps must be at least 1");
    }
    if args.repeat == 0 {
        bail!("--repeat must be at least 1");
    }
    let device: Device = args.device.parse()?;
    device.check_built()?;
    Ok(())
}

/// Refuses a case whose model draws of one step (K × d values and their gradients) or whose
/// kernel matrices cannot fit in this machine's memory. A step of the RBF kernel in norm mode
/// holds two m × m matrices at a time (the squared distances and their square roots for the
/// median; then the kernel values and the repulsion's weights; then the values and the
/// attraction's packed copy); four are counted, leaving room for the allocator.
fn check_memory(case: &Case, d: usize) -> Result<()> {
    let m = case.particles();
    let groups = match case.reuse {
        smi::GradientReuse::Shared => 1,
        smi::GradientReuse::PerPair => m,
    };
    let mut b = smi_fit::limits::Budget::new();
    b.add(
        &format!("the model draws of one {} step", case.method.name()),
        &format!("--particles {m}, --draws {}", case.draws),
        &[
            (groups, "groups"),
            (m, "particles"),
            (case.draws, "draws"),
            (d, "parameters"),
            (2, "copies"),
            (8, "bytes"),
        ],
    );
    if case.method.is_stein() {
        b.add(
            "the kernel's m × m matrices",
            &format!("--particles {m}"),
            &[
                (m, "particles"),
                (m, "particles"),
                (4, "copies"),
                (8, "bytes"),
            ],
        );
    }
    b.check()
}

/// Runs `smi bench`.
pub fn run(args: &Args) -> Result<()> {
    check_args(args)?;
    if let Some(t) = args.threads {
        rayon::ThreadPoolBuilder::new()
            .num_threads(t)
            .build_global()
            .context("cannot configure the rayon thread pool")?;
    }
    let cases = if args.all {
        Case::table()
    } else {
        let config = Config::parse(args.config.as_deref().unwrap_or_default())?;
        let method = parse_method(args.method.as_deref().unwrap_or_default())?;
        vec![Case::new(
            config,
            method,
            parse_reuse(&args.reuse)?,
            args.draws,
            args.particles,
        )?]
    };
    let peak = gemm_peak_gflops(1024, 6);
    let mut records = Vec::new();
    let mut built: Option<(Config, Model)> = None;
    for case in &cases {
        if built.as_ref().map(|(c, _)| *c) != Some(case.config) {
            drop(built.take()); // free the previous data set first (MNIST is 376 MB)
            built = Some((case.config, case.config.build()?));
        }
        let model = match &built {
            Some((_, m)) => m,
            None => bail!("internal: no model built"),
        };
        let mut best: Option<Record> = None;
        for _ in 0..args.repeat {
            let r = measure(case, model, args, peak)?;
            if best.as_ref().is_none_or(|b| r.ms_per_step < b.ms_per_step) {
                best = Some(r);
            }
        }
        let Some(rec) = best else {
            bail!("internal: no measurement")
        };
        let line = serde_json::to_string(&rec)?;
        if args.markdown {
            eprintln!("{line}");
        } else {
            println!("{line}");
            std::io::stdout().flush()?;
        }
        records.push(rec);
    }
    if args.markdown {
        print!("{}", markdown(&records, peak));
    }
    Ok(())
}

/// Times one case: warm-up, then the median of per-step wall-clock times.
fn measure(case: &Case, model: &Model, args: &Args, peak: f64) -> Result<Record> {
    let density = model.density();
    check_memory(case, density.dim())?;
    let device: Device = args.device.parse()?;
    let engine = case.engine_on(model, device, args.host_update)?;
    let mut state = engine.init()?;
    let order = case.config.shared_batch().map(|b| {
        let n = density.num_data();
        (smi_experiments::bench::epoch_order(n), b)
    });
    let rows_at = |t: usize| -> Option<&[usize]> {
        order.as_ref().map(|(o, b)| {
            let start = (t * b) % (o.len() - b + 1);
            &o[start..start + b]
        })
    };
    let load = load_average();
    for t in 0..args.warmup {
        engine.step(&mut state, rows_at(t))?;
    }
    let mut times = Vec::new();
    let started = Instant::now();
    let mut t = args.warmup;
    loop {
        let done = match args.steps {
            Some(n) => times.len() >= n,
            None => {
                times.len() >= 20
                    && (started.elapsed().as_secs_f64() >= args.min_seconds
                        || times.len() >= 1_000_000)
            }
        };
        if done {
            break;
        }
        let rows = rows_at(t);
        let t0 = Instant::now();
        let info = engine.step(&mut state, rows)?;
        times.push(t0.elapsed().as_secs_f64() * 1e3);
        std::hint::black_box(info);
        t += 1;
    }
    if times.is_empty() {
        bail!("--steps must be at least 1");
    }
    if args.profile {
        let Device::Cuda(ordinal) = device else {
            bail!("--profile times the GPU engine's phases: pass --device cuda");
        };
        let phases = case.profile_on(model, ordinal, args.host_update, 20, &rows_at)?;
        let total: f64 = phases.iter().map(|p| p.1).sum();
        eprintln!(
            "profile {} S={} device={device}{}: {total:.3} ms per step with a wait per phase",
            case.config.name(),
            case.draws,
            if args.host_update {
                " (host update)"
            } else {
                ""
            }
        );
        for (name, ms) in &phases {
            eprintln!("  {name:<36} {ms:>9.4} ms");
        }
    }
    let mean = times.iter().sum::<f64>() / times.len() as f64;
    times.sort_by(f64::total_cmp);
    let n = times.len();
    let median = if n % 2 == 1 {
        times[n / 2]
    } else {
        0.5 * (times[n / 2 - 1] + times[n / 2])
    };
    let d = density.dim();
    let model_flops = case.model_flops();
    let other_flops = case.other_flops(d);
    let gflops = model_flops / (median * 1e-3) / 1e9;
    let numpyro = case.numpyro_ms();
    let target = case.target(median, gflops, peak);
    Ok(Record {
        config: case.config.name(),
        method: case.method.name(),
        ms_per_step: round(median, 4),
        gflops: round(gflops, 3),
        gemm_peak_gflops: round(peak, 2),
        reuse: reuse_name(case.reuse),
        m: case.particles(),
        s: case.draws,
        k: case.draws_per_step(),
        d,
        rows_per_draw: case.config.rows_per_draw(),
        steps: n,
        ms_min: round(times[0], 4),
        ms_mean: round(mean, 4),
        model_gflop_per_step: round(model_flops / 1e9, 6),
        other_gflop_per_step: round(other_flops / 1e9, 6),
        gflops_total: round((model_flops + other_flops) / (median * 1e-3) / 1e9, 3),
        skipped_steps: state.skipped_steps,
        numpyro_ms: numpyro,
        speedup: numpyro.map(|v| round(v / median, 2)),
        target_met: target.as_ref().map(|t| t.1),
        target: target.map(|t| t.0),
        threads: rayon::current_num_threads(),
        load,
        device: if args.host_update && device != Device::Cpu {
            format!("{device}+host-update")
        } else {
            device.to_string()
        },
    })
}

/// GFLOP/s of an n×n f32 matmul through faer on one core (`Par::Seq`), best of `reps`.
fn gemm_peak_gflops(n: usize, reps: usize) -> f64 {
    let a: Vec<f32> = (0..n * n)
        .map(|i| ((i * 7919) % 1000) as f32 / 1000.0 - 0.5)
        .collect();
    let b: Vec<f32> = (0..n * n)
        .map(|i| ((i * 104_729) % 997) as f32 / 997.0 - 0.5)
        .collect();
    let mut c = vec![0.0f32; n * n];
    gemm(&mut c, &a, Op::N, &b, Op::N, n, n, n, 1.0, false);
    let mut best = f64::INFINITY;
    for _ in 0..reps {
        let t0 = Instant::now();
        gemm(&mut c, &a, Op::N, &b, Op::N, n, n, n, 1.0, false);
        best = best.min(t0.elapsed().as_secs_f64());
        std::hint::black_box(&c);
    }
    2.0 * (n as f64).powi(3) / best / 1e9
}

/// The 1-minute load average (Linux), if readable.
fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn round(v: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (v * f).round() / f
}

/// Formats a millisecond value with about three significant digits.
fn ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// The BENCHMARKS.md table of `records`.
fn markdown(records: &[Record], peak: f64) -> String {
    let threads = rayon::current_num_threads();
    let loads: Vec<f64> = records.iter().filter_map(|r| r.load).collect();
    let load = if loads.is_empty() {
        "n/a".to_string()
    } else {
        let lo = loads.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = loads.iter().copied().fold(0.0, f64::max);
        format!("{lo:.2}–{hi:.2}")
    };
    let mut s = format!(
        "GEMM peak (f32 faer matmul n = 1024, one core, sequential): {peak:.1} GFLOP/s; \
         {threads} rayon threads; 1-min load average during the run: {load}.\n\n"
    );
    s.push_str(
        "| config | method | reuse | m | S | K | ms/step | model GFLOP/s | % of 1-core peak | \
         NumPyro ms | speed-up | target | met |\n",
    );
    s.push_str("|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|---|---|\n");
    for r in records {
        let np = r.numpyro_ms.map_or("–".into(), ms);
        let sp = r.speedup.map_or("–".into(), |v| format!("{v:.1}×"));
        let target = r.target.clone().unwrap_or_else(|| "–".into());
        let met = match r.target_met {
            Some(true) => "yes",
            Some(false) => "**no**",
            None => "–",
        };
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {:.2} | {:.0} % | {np} | {sp} | {target} | \
             {met} |\n",
            r.config,
            r.method,
            r.reuse,
            r.m,
            r.s,
            r.k,
            ms(r.ms_per_step),
            r.gflops,
            100.0 * r.gflops / r.gemm_peak_gflops,
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use smi::{GradientReuse, Method};
    use smi_experiments::bench::METHODS;

    #[test]
    fn names_round_trip_and_errors_list_valid_values() {
        for c in Config::ALL {
            assert_eq!(Config::parse(c.name()).unwrap(), c);
        }
        for m in METHODS {
            assert_eq!(parse_method(m.name()).unwrap(), m);
        }
        let e = Config::parse("cifar").unwrap_err().to_string();
        assert!(e.contains("mvn-100") && e.contains("mnist-1"), "{e}");
        let e = parse_method("nuts").unwrap_err().to_string();
        assert!(e.contains("smi") && e.contains("map"), "{e}");
        assert!(parse_reuse("both").is_err());
        assert_eq!(parse_reuse("per_pair").unwrap(), GradientReuse::PerPair);
        assert!(Case::new(
            Config::Boston,
            Method::Map,
            GradientReuse::PerPair,
            None,
            None
        )
        .is_err());
    }

    #[test]
    fn device_flag_is_checked_before_anything_runs() {
        let args = |device: &str| Args {
            config: Some("boston".into()),
            method: Some("smi".into()),
            steps: Some(1),
            warmup: 0,
            min_seconds: 0.0,
            reuse: "shared".into(),
            draws: None,
            particles: None,
            all: false,
            markdown: false,
            repeat: 1,
            threads: None,
            device: device.into(),
            host_update: false,
            profile: false,
        };
        assert!(check_args(&args("cpu")).is_ok());
        let e = check_args(&args("tpu")).unwrap_err().to_string();
        assert!(e.contains("cuda:N"), "{e}");
        // without the cuda feature the flag says how to get it; with it, the GPU is looked
        // for only when the engine is built
        match (check_args(&args("cuda")), Device::CUDA_BUILT) {
            (Ok(()), true) => {}
            (Err(e), false) => assert!(e.to_string().contains("--features cuda"), "{e}"),
            (r, built) => panic!("--device cuda with the backend built = {built}: {r:?}"),
        }
        // a case without a GPU path is refused in words
        let c = Case::new(
            Config::Mvn100,
            Method::Svgd,
            GradientReuse::Shared,
            None,
            None,
        )
        .unwrap();
        let model = Config::Mvn100.build().unwrap();
        let e = c
            .engine_on(&model, Device::Cuda(0), false)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("--device cuda") || e.contains("--features cuda"),
            "{e}"
        );
    }

    #[test]
    fn flop_counts_follow_the_documented_rule() {
        let c = Case::new(
            Config::Mnist1,
            Method::Smi,
            GradientReuse::Shared,
            Some(55),
            None,
        )
        .unwrap();
        assert_eq!(c.draws_per_step(), 275);
        // 128 rows × (784·100 + 100·10) MACs × 2 flops × 3 (fwd + bwd) × 275 draws
        let want = 128.0 * 79_400.0 * 6.0 * 275.0;
        assert!((c.model_flops() - want).abs() < 1.0);
        let p = Case::new(
            Config::Mvn100,
            Method::Smi,
            GradientReuse::PerPair,
            None,
            None,
        )
        .unwrap();
        assert_eq!(p.draws_per_step(), 20 * 20 * 100);
    }

    #[test]
    fn particles_beyond_memory_are_refused_in_words() {
        // 10⁶ SVGD particles of d = 10 401 (155 GiB of draws) and 10⁶ SMI particles of the
        // 100-dimensional Normal with one draw each, whose draws fit (1.6 GB) but whose m × m
        // kernel matrices (8 TB each) do not
        let svgd = Case::new(
            Config::Wave100,
            Method::Svgd,
            GradientReuse::Shared,
            None,
            Some(1_000_000),
        )
        .unwrap();
        let e = check_memory(&svgd, 10_401).unwrap_err().to_string();
        assert!(e.contains("--particles"), "{e}");
        let smi = Case::new(
            Config::Mvn100,
            Method::Smi,
            GradientReuse::Shared,
            Some(1),
            Some(1_000_000),
        )
        .unwrap();
        let e = check_memory(&smi, 100).unwrap_err().to_string();
        assert!(e.contains("m × m") && e.contains("--particles"), "{e}");
        let fits = Case::new(
            Config::Wave100,
            Method::Svgd,
            GradientReuse::Shared,
            None,
            Some(256),
        )
        .unwrap();
        assert!(check_memory(&fits, 10_401).is_ok());
    }

    #[test]
    fn particles_flag_sets_m_of_the_stein_engines_only() {
        let svgd = |m| {
            Case::new(
                Config::Wave100,
                Method::Svgd,
                GradientReuse::Shared,
                None,
                m,
            )
        };
        let c = svgd(Some(256)).unwrap();
        assert_eq!((c.particles(), c.draws_per_step()), (256, 256));
        match c.settings().unwrap() {
            smi::MethodSettings::Stein(s) => assert_eq!(s.num_particles, 256),
            other => panic!("SVGD's settings: {other:?}"),
        }
        assert_eq!(svgd(None).unwrap().particles(), Config::Wave100.particles());
        // NumPyro's numbers are for the configuration's m only
        let b = |m| {
            Case::new(
                Config::BostonOneHidden,
                Method::Svgd,
                GradientReuse::Shared,
                None,
                m,
            )
        };
        assert!(b(None).unwrap().numpyro_ms().is_some());
        assert!(b(Some(6)).unwrap().numpyro_ms().is_none());
        let e = svgd(Some(0)).unwrap_err().to_string();
        assert!(e.contains("--particles"), "{e}");
        let e = Case::new(
            Config::Boston,
            Method::Ovi,
            GradientReuse::Shared,
            None,
            Some(4),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("--particles") && e.contains("ovi"), "{e}");
    }

    #[test]
    fn every_table_line_has_a_numpyro_number_or_is_a_paper_or_diagnostic_config() {
        for c in Case::table() {
            let has = c.numpyro_ms().is_some();
            let paper = matches!(c.config, Config::Wave100 | Config::Boston | Config::Mnist1);
            // The funnel lines compare m = 20 with m = 5 on one machine (no NumPyro number).
            let diagnostic = matches!(c.config, Config::Hier10M5 | Config::Hier10M20);
            assert!(has || paper || diagnostic, "{c:?}");
        }
    }
}
