//! The CUDA C source of the backend's kernels, compiled once per context with NVRTC.
//!
//! Every kernel is `extern "C"` (its name is the symbol [`KERNEL_NAMES`] lists) and indexes
//! row-major buffers: θ and its gradient K×d (`float`), activations K×n×width, the particles
//! m×p with p = 2d (loc then ρ, σ = softplus(ρ)). Sums that feed log densities are accumulated
//! in `double`. The random numbers are Philox4x32-10 (Salmon et al. 2011) with a Box–Muller
//! transform, the same stream as [`super::philox`] computes on the host.

/// The kernels' source, one translation unit.
pub const SOURCE: &str = r#"
typedef unsigned int u32;
typedef unsigned long long u64;

#define LN_2PI 1.8378770664093453
#define LN_SQRT_2PI 0.9189385332046727

/* ---------------------------------------------------------------- random numbers */

__device__ __forceinline__ void philox_round(u32 &c0, u32 &c1, u32 &c2, u32 &c3, u32 k0, u32 k1) {
    const u32 M0 = 0xD2511F53u, M1 = 0xCD9E8D57u;
    u32 hi0 = __umulhi(M0, c0), lo0 = M0 * c0;
    u32 hi1 = __umulhi(M1, c2), lo1 = M1 * c2;
    u32 n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
    c0 = n0; c1 = n1; c2 = n2; c3 = n3;
}

/* Philox4x32-10 of counter (c0..c3) under key (k0, k1), in place. */
__device__ void philox(u32 &c0, u32 &c1, u32 &c2, u32 &c3, u32 k0, u32 k1) {
    const u32 W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;
    for (int r = 0; r < 10; ++r) {
        philox_round(c0, c1, c2, c3, k0, k1);
        k0 += W0; k1 += W1;
    }
}

/* Standard normal number i of stream `stream` under `seed`: counter (i/4, stream), lanes
   (0,1) and (2,3) are Box-Muller pairs, lane i%4 picks the value. */
__device__ float normal_at(u64 seed, u32 stream, u64 i) {
    u64 block = i >> 2;
    u32 c0 = (u32)block, c1 = (u32)(block >> 32), c2 = stream, c3 = 0u;
    philox(c0, c1, c2, c3, (u32)seed, (u32)(seed >> 32));
    u32 lane = (u32)(i & 3);
    u32 a = lane < 2 ? c0 : c2;
    u32 b = lane < 2 ? c1 : c3;
    double u1 = ((double)a + 0.5) * 2.3283064365386963e-10;
    double u2 = ((double)b + 0.5) * 2.3283064365386963e-10;
    double r = sqrt(-2.0 * log(u1));
    double z = (lane & 1) ? r * sin(6.283185307179586 * u2) : r * cos(6.283185307179586 * u2);
    return (float)z;
}

/* murmur3's 32-bit finaliser. */
__device__ __forceinline__ u32 fmix32(u32 h) {
    h ^= h >> 16; h *= 0x85EBCA6Bu; h ^= h >> 13; h *= 0xC2B2AE35u; h ^= h >> 16;
    return h;
}

/* Position i of a pseudo-random permutation of 0..n (n >= 2): a 4-round Feistel network on
   2*half bits with round keys key[0..4], cycle-walking until the value is below n. */
__device__ u32 feistel_perm(u32 i, u32 n, u32 half, const u32 *key) {
    u32 mask = (1u << half) - 1u;
    u32 x = i;
    do {
        u32 l = x >> half, r = x & mask;
        for (int k = 0; k < 4; ++k) {
            u32 f = fmix32(r ^ key[k]) & mask;
            u32 t = l ^ f;
            l = r; r = t;
        }
        x = (l << half) | r;
    } while (x >= n);
    return x;
}

/* rows[k*b + i] = position i of draw k's permutation of 0..n: b distinct rows per draw. The
   round keys of draw k are Philox(counter (k, 0, 1, 0), seed). */
extern "C" __global__ void sample_rows(u64 seed, int num_draws, int b, int n, int half,
                                       int *rows) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (long long)num_draws * b) return;
    int k = (int)(t / b), i = (int)(t % b);
    u32 c0 = (u32)k, c1 = 0u, c2 = 1u, c3 = 0u;
    philox(c0, c1, c2, c3, (u32)seed, (u32)(seed >> 32));
    u32 key[4] = {c0, c1, c2, c3};
    rows[t] = (int)feistel_perm((u32)i, (u32)n, (u32)half, key);
}

/* ---------------------------------------------------------------- guide */

__device__ __forceinline__ float softplus_f(float x) {
    return x > 20.0f ? x : log1pf(expf(x));
}

/* Per particle j and coordinate c: sigma = softplus(rho), inv_var = 1/sigma^2, log sigma. */
extern "C" __global__ void guide_coeffs(const float *parts, int m, int d, float *sigma,
                                        float *inv_var, float *log_sigma) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (long long)m * d) return;
    int j = (int)(t / d), c = (int)(t % d);
    float s = softplus_f(parts[(long long)j * 2 * d + d + c]);
    sigma[t] = s;
    inv_var[t] = 1.0f / (s * s);
    log_sigma[t] = logf(s);
}

/* eps (K x d) from stream 0 of `seed`; theta = loc + sigma * eps, draw k of particle k / S. */
extern "C" __global__ void sample_theta(u64 seed, const float *parts, const float *sigma,
                                        int num_draws, int s, int d, float *eps, float *theta) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (long long)num_draws * d) return;
    int k = (int)(t / d), c = (int)(t % d);
    int j = k / s;
    float e = normal_at(seed, 0u, (u64)t);
    eps[t] = e;
    theta[t] = parts[(long long)j * 2 * d + c] + sigma[(long long)j * d + c] * e;
}

/* L[k, j] = log N(theta_k | loc_j, sigma_j): one block per (k, j), threads over coordinates. */
extern "C" __global__ void mix_components(const float *theta, const float *parts,
                                          const float *inv_var, const float *log_sigma,
                                          int m, int d, double *comp) {
    extern __shared__ double red[];
    int k = blockIdx.x, j = blockIdx.y;
    const float *u = theta + (long long)k * d;
    const float *loc = parts + (long long)j * 2 * d;
    const float *iv = inv_var + (long long)j * d;
    const float *ls = log_sigma + (long long)j * d;
    double acc = 0.0;
    for (int c = threadIdx.x; c < d; c += blockDim.x) {
        float r = u[c] - loc[c];
        acc += (double)(-0.5f * r * r * iv[c] - ls[c]);
    }
    red[threadIdx.x] = acc;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w) red[threadIdx.x] += red[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) comp[(long long)k * m + j] = red[0] - 0.5 * d * LN_2PI;
}

/* logq[k] = logsumexp_j L[k, j] - ln m; resp[k, j] = softmax_j L[k, j] (one thread per k). */
extern "C" __global__ void mix_responsibilities(const double *comp, int num_draws, int m,
                                                double *logq, float *resp) {
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= num_draws) return;
    const double *l = comp + (long long)k * m;
    double mx = -1.0 / 0.0;
    for (int j = 0; j < m; ++j) mx = fmax(mx, l[j]);
    double sum = 0.0;
    for (int j = 0; j < m; ++j) sum += exp(l[j] - mx);
    for (int j = 0; j < m; ++j) resp[(long long)k * m + j] = (float)(exp(l[j] - mx) / sum);
    logq[k] = mx + log(sum) - log((double)m);
}

/* The per-particle ELBO gradient (docs/algorithms.md 2.2), in two kernels. pullback: one thread
   per (draw group g, particle i, coordinate c) over the draws q of group g (draws
   [g*s/groups, (g+1)*s/groups) of particle i): delta = tau * grad log p - grad log q_mix with
   grad log q_mix = -sum_j resp_j (u - loc_j) / sigma_j^2, summed into
   part[(g*m + i)*2d + c] (delta) and part[(g*m + i)*2d + d + c] (delta * eps). Groups give the
   GPU enough threads when m*d is small (UCI: m*d = 13 260). pullback_finish: ghat[i, c] =
   sum_g part / s, ghat[i, d + c] = sum_g part / s * sigmoid(rho_ic), groups summed in order.
   With one group pullback writes ghat itself (part is ghat) and pullback_finish is not run. */
extern "C" __global__ void pullback(const float *theta, const float *eps, const float *grad,
                                    const float *resp, const float *parts, const float *inv_var,
                                    int m, int s, int d, double tau, int groups, double *part) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long md = (long long)m * d;
    if (t >= md * groups) return;
    int g = (int)(t / md);
    long long r = t % md;
    int i = (int)(r / d), c = (int)(r % d);
    int q0 = (int)((long long)g * s / groups), q1 = (int)((long long)(g + 1) * s / groups);
    double acc_loc = 0.0, acc_rho = 0.0;
    for (int q = q0; q < q1; ++q) {
        long long k = (long long)i * s + q;
        float u = theta[k * d + c];
        float gq = 0.0f;
        for (int j = 0; j < m; ++j) {
            gq -= resp[k * m + j] * (u - parts[(long long)j * 2 * d + c]) * inv_var[(long long)j * d + c];
        }
        double delta = tau * (double)grad[k * d + c] - (double)gq;
        acc_loc += delta;
        acc_rho += delta * (double)eps[k * d + c];
    }
    long long base = ((long long)g * m + i) * 2 * d;
    if (groups == 1) {
        /* one group: part is ghat itself, finished here (no pullback_finish launch) */
        float rho = parts[(long long)i * 2 * d + d + c];
        double sig = 1.0 / (1.0 + exp(-(double)rho));
        part[base + c] = acc_loc / s;
        part[base + d + c] = acc_rho / s * sig;
        return;
    }
    part[base + c] = acc_loc;
    part[base + d + c] = acc_rho;
}

extern "C" __global__ void pullback_finish(const double *part, const float *parts, int m, int s,
                                           int d, int groups, double *ghat) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (long long)m * d) return;
    int i = (int)(t / d), c = (int)(t % d);
    double acc_loc = 0.0, acc_rho = 0.0;
    for (int g = 0; g < groups; ++g) {
        long long base = ((long long)g * m + i) * 2 * d;
        acc_loc += part[base + c];
        acc_rho += part[base + d + c];
    }
    float rho = parts[(long long)i * 2 * d + d + c];
    double sig = 1.0 / (1.0 + exp(-(double)rho));
    ghat[(long long)i * 2 * d + c] = acc_loc / s;
    ghat[(long long)i * 2 * d + d + c] = acc_rho / s * sig;
}

/* ---------------------------------------------------------------- network */

/* out[r, c] = x[rows[r], c] for r < num_rows (x is N x width). */
extern "C" __global__ void gather_rows(const float *x, const int *rows, int num_rows, int width,
                                       float *out) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (long long)num_rows * width) return;
    int r = (int)(t / width), c = (int)(t % width);
    out[t] = x[(long long)rows[r] * width + c];
}

/* out[r] = labels[rows[r]] for r < num_rows. */
extern "C" __global__ void gather_labels(const int *labels, const int *rows, int num_rows,
                                         int *out) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < num_rows) out[r] = labels[rows[r]];
}

/* z[k, r, j] = act(z[k, r, j] + theta[k, boff + j]) over K x n x width; act 0 = none,
   1 = tanh, 2 = relu. */
extern "C" __global__ void bias_act(float *z, const float *theta, int num_draws, int n,
                                    int width, int d, int boff, int act) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long per = (long long)n * width;
    if (t >= (long long)num_draws * per) return;
    int k = (int)(t / per), j = (int)(t % width);
    float v = z[t] + theta[(long long)k * d + boff + j];
    if (act == 1) v = tanhf(v);
    else if (act == 2) v = fmaxf(v, 0.0f);
    z[t] = v;
}

/* delta[t] *= act'(a[t]) written through the activation a = act(z): tanh: 1 - a^2,
   relu: [a > 0]. */
extern "C" __global__ void act_grad(float *delta, const float *a, long long len, int act) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= len) return;
    float v = a[t];
    delta[t] *= act == 1 ? 1.0f - v * v : (v > 0.0f ? 1.0f : 0.0f);
}

/* grad[k, goff + j] = sum_r delta[k, r, j] (the bias gradients), one thread per (k, j). */
extern "C" __global__ void col_sums(const float *delta, int num_draws, int n, int width, int d,
                                    int goff, float *grad) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (long long)num_draws * width) return;
    int k = (int)(t / width), j = (int)(t % width);
    const float *dk = delta + (long long)k * n * width;
    float acc = 0.0f;
    for (int r = 0; r < n; ++r) acc += dk[(long long)r * width + j];
    grad[(long long)k * d + goff + j] = acc;
}

/* Block reduction of one double per thread into red[0] (blockDim.x a power of two). */
__device__ double block_sum(double v, double *red) {
    red[threadIdx.x] = v;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w) red[threadIdx.x] += red[threadIdx.x + w];
        __syncthreads();
    }
    double out = red[0];
    __syncthreads();
    return out;
}

/* The Gaussian head of draw k (one block per draw): residuals r = y - out over the draw's n
   rows (y already gathered per draw, K x n), dout = scale * prec * r, and
   ll[k] = scale * (n (log prec / 2 - ln sqrt(2 pi)) - prec * ss / 2) [+ the Gamma prior of
   prec, + u with the Jacobian]. gamma = 0: fixed noise with log_prec_fixed; gamma = 1: prec =
   exp(theta[k, d - 1]) ~ Gamma(shape, rate), gradient of u written into grad[k, d - 1]. */
extern "C" __global__ void gauss_head(const float *out, const float *y, const float *theta,
                                      int n, int d, double scale, int gamma,
                                      double log_prec_fixed, double shape, double rate,
                                      double gamma_const, int jacobian, double *ll,
                                      float *dout, float *grad) {
    extern __shared__ double red[];
    int k = blockIdx.x;
    double u = gamma ? (double)theta[(long long)k * d + d - 1] : log_prec_fixed;
    double prec = exp(u);
    float c = (float)(scale * prec);
    double ss = 0.0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        long long t = (long long)k * n + i;
        float r = y[t] - out[t];
        ss += (double)r * (double)r;
        dout[t] = c * r;
    }
    ss = block_sum(ss, red);
    if (threadIdx.x != 0) return;
    double lik = scale * (n * (0.5 * u - LN_SQRT_2PI) - 0.5 * prec * ss);
    if (gamma) {
        double lp = lik + gamma_const + (shape - 1.0) * u - rate * prec;
        double g = scale * (0.5 * n - 0.5 * prec * ss) + (shape - 1.0) - rate * prec;
        if (jacobian) { lp += u; g += 1.0; }
        grad[(long long)k * d + d - 1] = (float)g;
        ll[k] = lp;
    } else {
        ll[k] = lik;
    }
}

/* The categorical head of draw k (one block per draw, threads over rows): for logits z (K x n
   x C) and labels (n, shared by the draws), dz = scale * (onehot - softmax) and
   ll[k] = scale * sum_i log softmax(z_i)[label_i]. */
extern "C" __global__ void softmax_head(const float *z, const int *labels, int n, int classes,
                                        double scale, double *ll, float *dz) {
    extern __shared__ double red[];
    int k = blockIdx.x;
    double acc = 0.0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        const float *zi = z + ((long long)k * n + i) * classes;
        float *di = dz + ((long long)k * n + i) * classes;
        double mx = -1.0 / 0.0;
        for (int c = 0; c < classes; ++c) mx = fmax(mx, (double)zi[c]);
        double sum = 0.0;
        for (int c = 0; c < classes; ++c) sum += exp((double)zi[c] - mx);
        int lab = labels[i];
        for (int c = 0; c < classes; ++c) {
            double p = exp((double)zi[c] - mx) / sum;
            di[c] = (float)(scale * ((c == lab ? 1.0 : 0.0) - p));
        }
        acc += (double)zi[lab] - mx - log(sum);
    }
    acc = block_sum(acc, red);
    if (threadIdx.x == 0) ll[k] = scale * acc;
}

/* The N(0, s^2) prior of the network weights (one block per draw): grad[k, j] -= theta[k, j] *
   inv_var for j < nw, and logp[k] = log_norm - inv_var * sum_j theta[k, j]^2 / 2 + ll[k]. */
extern "C" __global__ void prior_finish(const float *theta, int nw, int d, double inv_var,
                                        double log_norm, const double *ll, float *grad,
                                        double *logp) {
    extern __shared__ double red[];
    int k = blockIdx.x;
    const float *tk = theta + (long long)k * d;
    float *gk = grad + (long long)k * d;
    float iv = (float)inv_var;
    double ss = 0.0;
    for (int j = threadIdx.x; j < nw; j += blockDim.x) {
        float v = tk[j];
        ss += (double)v * (double)v;
        gk[j] -= v * iv;
    }
    ss = block_sum(ss, red);
    if (threadIdx.x == 0) logp[k] = log_norm - 0.5 * inv_var * ss + ll[k];
}
/* ---------------------------------------------------------------- the Stein update on the device */

/* out[t] = (float)x[t]: the network's f32 copy of the particles. */
extern "C" __global__ void to_f32(const double *x, long long len, float *out) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t < len) out[t] = (float)x[t];
}

/* Partial squared distances of the particles (x: m x p): block (b, i*m + j) with i < j sums
   (x_i - x_j)^2 over the columns [b*chunk, (b+1)*chunk) into
   partials[(i*m + j)*gridDim.x + b]; blocks with i >= j write nothing. */
extern "C" __global__ void pair_sq_partials(const double *x, int m, int p, int chunk,
                                            double *partials) {
    extern __shared__ double red[];
    int pair = blockIdx.y, i = pair / m, j = pair % m;
    if (i >= j) return;
    long long start = (long long)blockIdx.x * chunk;
    long long end = start + chunk < (long long)p ? start + chunk : (long long)p;
    const double *xi = x + (long long)i * p, *xj = x + (long long)j * p;
    double acc = 0.0;
    for (long long c = start + threadIdx.x; c < end; c += blockDim.x) {
        double r = xi[c] - xj[c];
        acc += r * r;
    }
    acc = block_sum(acc, red);
    if (threadIdx.x == 0) partials[(long long)pair * gridDim.x + blockIdx.x] = acc;
}

/* The Stein direction of every particle l, one thread per column c (docs/algorithms.md 2.3):
   phi[l, c] = c_att * sum_i K[i, l] g[i, c] + c_rep * (sum_i W[i, l] x[i, c] - s[l] x[l, c]),
   coef = K (m x m), W = dK/dx weights (m x m), s[l] = sum_i W[i, l]; a zero kernel weight is
   skipped, as on the host. partials[block] = the block's sum of phi^2 (the step's loss). */
extern "C" __global__ void stein_direction(const double *x, const double *g, const double *coef,
                                           int m, int p, double c_att, double c_rep,
                                           double *phi, double *partials) {
    extern __shared__ double red[];
    long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const double *kw = coef, *w = coef + (long long)m * m, *s = coef + 2LL * m * m;
    double sq = 0.0;
    if (c < p) {
        for (int l = 0; l < m; ++l) {
            double a = 0.0, r = 0.0;
            for (int i = 0; i < m; ++i) {
                double k = kw[i * m + l];
                if (k != 0.0) a += k * g[(long long)i * p + c];
                r += w[i * m + l] * x[(long long)i * p + c];
            }
            if (s[l] != 0.0) r -= s[l] * x[(long long)l * p + c];
            double v = c_att * a + c_rep * r;
            phi[(long long)l * p + c] = v;
            sq += v * v;
        }
    }
    sq = block_sum(sq, red);
    if (threadIdx.x == 0) partials[blockIdx.x] = sq;
}

/* One optimizer step on the particles x along g = -phi (phi is the ascent direction), then
   out32 = (float)x for the next step's network. kind 0: NumPyro's Adagrad (a = sum g^2,
   b = momentum; h0 = lr, h1 = momentum); kind 1: Adam (a = m, b = v; h0 = lr / (1 - b1^t),
   h1 = b1, h2 = b2, h3 = 1 / sqrt(1 - b2^t), h4 = eps); kind 2: SGD (h0 = lr). */
extern "C" __global__ void optimizer_step(int kind, double *x, double *a, double *b,
                                          const double *phi, long long len, double h0,
                                          double h1, double h2, double h3, double h4,
                                          float *out32) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= len) return;
    double g = -phi[t];
    double xv = x[t];
    if (kind == 0) {
        double gs = a[t] + g * g;
        a[t] = gs;
        double scaled = gs > 0.0 ? g / sqrt(gs) : 0.0;
        double n = (1.0 - h1) * scaled + h1 * b[t];
        b[t] = n;
        xv -= h0 * n;
    } else if (kind == 1) {
        double mm = (1.0 - h1) * g + h1 * a[t];
        double vv = (1.0 - h2) * g * g + h2 * b[t];
        a[t] = mm;
        b[t] = vv;
        xv -= h0 * mm / (sqrt(vv) * h3 + h4);
    } else {
        xv -= h0 * g;
    }
    x[t] = xv;
    out32[t] = (float)xv;
}
"#;

/// The kernels [`SOURCE`] defines, in the order of the backend's `Kernel` enum (`context.rs`).
pub const KERNEL_NAMES: [&str; 19] = [
    "sample_rows",
    "guide_coeffs",
    "sample_theta",
    "mix_components",
    "mix_responsibilities",
    "pullback",
    "gather_rows",
    "gather_labels",
    "bias_act",
    "act_grad",
    "col_sums",
    "gauss_head",
    "softmax_head",
    "prior_finish",
    "to_f32",
    "pair_sq_partials",
    "stein_direction",
    "optimizer_step",
    "pullback_finish",
];

/// Threads per block of the elementwise kernels.
pub const BLOCK: u32 = 256;

/// Threads per block of the per-draw reductions (a power of two; shared memory holds one
/// `double` per thread).
pub const REDUCE_BLOCK: u32 = 256;
