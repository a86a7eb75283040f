//! Distributions of spans as a few hundred weighted atoms, closed under sums of
//! independent spans and mixtures, with the exact mean kept beside them.
//!
//! A [`Dist`] becomes [`ATOMS`] equally likely atoms at its mid-quantiles
//! (`q((j + ½) / ATOMS)`); a sum takes every pair of atoms and a mixture every atom,
//! and both are merged back to [`ATOMS`] groups of equal mass, each at its weighted
//! mean. Quantiles are thus good to about one atom's mass (0.2%); the mean is carried
//! exactly from the distributions' own means, not from the atoms.

use steadfast_upstream::dist::{Dist, MAX_SPAN};

/// How many atoms a spread keeps.
pub(crate) const ATOMS: usize = 512;

/// A distribution of spans in seconds, some of whose mass may be lost (never served).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Spread {
    /// `(seconds, probability)`, sorted by value, distinct values; the probabilities
    /// add up to `1 − lost`.
    atoms: Vec<(f64, f64)>,
    /// The probability of never ending (a chain of failures cut off).
    lost: f64,
    /// The exact mean of the part that ends.
    mean: f64,
    /// The probability of each atom's value or less.
    cumulative: Vec<f64>,
}

impl Spread {
    fn new(atoms: Vec<(f64, f64)>, lost: f64, mean: f64) -> Spread {
        let atoms = merged(atoms);
        let cumulative = atoms
            .iter()
            .scan(0.0, |acc, (_, p)| {
                *acc += p;
                Some(*acc)
            })
            .collect();
        Spread {
            atoms,
            lost,
            mean,
            cumulative,
        }
    }

    /// Always `secs`.
    pub(crate) fn point(secs: f64) -> Spread {
        Spread::new(vec![(secs, 1.0)], 0.0, secs)
    }

    /// Never ends.
    pub(crate) fn never() -> Spread {
        Spread::new(Vec::new(), 1.0, 0.0)
    }

    /// The distribution `d`.
    pub(crate) fn of(d: &Dist) -> Spread {
        let quantile = |u: f64| match *d {
            Dist::Fixed(x) => x.as_secs_f64(),
            Dist::Uniform { min, max } => {
                let (a, b) = (min.as_secs_f64(), max.as_secs_f64());
                a + (b - a) * u
            }
            Dist::Lognormal { median, sigma } => {
                let x = median.as_secs_f64() * (sigma * normal_quantile(u)).exp();
                x.min(MAX_SPAN.as_secs_f64())
            }
            // The ordinary draws below, the held ones above (a tail is slow).
            Dist::Tail {
                max, share, held, ..
            } if u >= 1.0 - share => held.as_secs_f64().max(max.as_secs_f64()),
            Dist::Tail {
                min, max, share, ..
            } => {
                let (a, b) = (min.as_secs_f64(), max.as_secs_f64());
                a + (b - a) * (u / (1.0 - share))
            }
        };
        let n = if matches!(d, Dist::Fixed(_)) {
            1
        } else {
            ATOMS
        };
        let atoms = (0..n)
            .map(|j| (quantile((j as f64 + 0.5) / n as f64), 1.0 / n as f64))
            .collect();
        Spread::new(atoms, 0.0, mean_of(d))
    }

    /// The sum of an independent draw of each.
    pub(crate) fn plus(&self, other: &Spread) -> Spread {
        let mut atoms = Vec::with_capacity(self.atoms.len() * other.atoms.len());
        for &(a, p) in &self.atoms {
            atoms.extend(other.atoms.iter().map(|&(b, q)| (a + b, p * q)));
        }
        let lost = 1.0 - (1.0 - self.lost) * (1.0 - other.lost);
        Spread::new(atoms, lost, self.mean + other.mean)
    }

    /// The mixture that is `parts[i].1` with probability `parts[i].0` (the weights add
    /// up to 1).
    pub(crate) fn mix(parts: &[(f64, &Spread)]) -> Spread {
        let parts: Vec<_> = parts.iter().filter(|(w, _)| *w > 0.0).collect();
        let atoms = parts
            .iter()
            .flat_map(|(w, s)| s.atoms.iter().map(move |&(v, p)| (v, p * w)))
            .collect();
        let served: f64 = parts.iter().map(|(w, s)| w * s.served()).sum();
        let weighted: f64 = parts.iter().map(|(w, s)| w * s.served() * s.mean).sum();
        let lost = parts.iter().map(|(w, s)| w * s.lost).sum();
        let mean = if served > 0.0 { weighted / served } else { 0.0 };
        Spread::new(atoms, lost, mean)
    }

    /// The same distribution in at most `n` atoms (for a term of a sum whose detail
    /// matters less).
    pub(crate) fn coarse(&self, n: usize) -> Spread {
        if self.atoms.len() <= n {
            return self.clone();
        }
        Spread::new(grouped(&self.atoms, n.max(1)), self.lost, self.mean)
    }

    /// The mean of the part that ends, in seconds.
    pub(crate) fn mean(&self) -> f64 {
        self.mean
    }

    /// The probability of ending at all.
    pub(crate) fn served(&self) -> f64 {
        1.0 - self.lost
    }

    /// The atoms, sorted by value.
    pub(crate) fn atoms(&self) -> &[(f64, f64)] {
        &self.atoms
    }

    /// The probability of ending within `secs`.
    pub(crate) fn within(&self, secs: f64) -> f64 {
        let n = self.atoms.partition_point(|(v, _)| *v <= secs);
        n.checked_sub(1)
            .and_then(|i| self.cumulative.get(i))
            .copied()
            .unwrap_or(0.0)
    }
}

/// Sorts atoms, merges equal values and, past [`ATOMS`], groups of equal mass.
fn merged(mut atoms: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    atoms.retain(|(_, p)| *p > 0.0);
    atoms.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(atoms.len().min(ATOMS));
    for (v, p) in atoms {
        match out.last_mut() {
            Some(last) if last.0 == v => last.1 += p,
            _ => out.push((v, p)),
        }
    }
    if out.len() <= ATOMS {
        return out;
    }
    grouped(&out, ATOMS)
}

/// `n` groups of equal mass, each at its weighted mean value (an atom on a boundary
/// is split between its two groups, so the mean is kept).
fn grouped(atoms: &[(f64, f64)], n: usize) -> Vec<(f64, f64)> {
    let total: f64 = atoms.iter().map(|(_, p)| p).sum();
    let step = total / n as f64;
    let mut out = Vec::with_capacity(n);
    let (mut mass, mut moment) = (0.0, 0.0);
    for &(v, mut p) in atoms {
        while mass + p >= step && out.len() + 1 < n {
            let take = step - mass;
            out.push(((moment + take * v) / step, step));
            p -= take;
            (mass, moment) = (0.0, 0.0);
        }
        mass += p;
        moment += p * v;
    }
    if mass > 0.0 {
        out.push((moment / mass, mass));
    }
    out
}

/// The exact mean of `d`, in seconds (a log-normal's `median × e^(σ²/2)`, its cut at
/// [`MAX_SPAN`] ignored).
pub(crate) fn mean_of(d: &Dist) -> f64 {
    match *d {
        Dist::Fixed(x) => x.as_secs_f64(),
        Dist::Uniform { min, max } => (min.as_secs_f64() + max.as_secs_f64()) / 2.0,
        Dist::Lognormal { median, sigma } => median.as_secs_f64() * (sigma * sigma / 2.0).exp(),
        Dist::Tail {
            min,
            max,
            share,
            held,
        } => {
            (1.0 - share) * (min.as_secs_f64() + max.as_secs_f64()) / 2.0
                + share * held.as_secs_f64()
        }
    }
}

/// The standard normal quantile (Acklam's rational approximation, relative error
/// below 1.2e-9), for `p` in (0, 1).
pub(crate) fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    const LOW: f64 = 0.024_25;
    if p < LOW {
        return tail((-2.0 * p.ln()).sqrt());
    }
    if p > 1.0 - LOW {
        return -tail((-2.0 * (1.0 - p).ln()).sqrt());
    }
    let q = p - 0.5;
    let r = q * q;
    (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
        / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::time::Duration;

    fn quantile(s: &Spread, p: f64) -> f64 {
        let mut acc = 0.0;
        for &(v, w) in s.atoms() {
            acc += w;
            if acc >= p {
                return v;
            }
        }
        f64::INFINITY
    }

    #[test]
    fn the_normal_quantile_matches_known_values() {
        assert!(normal_quantile(0.5).abs() < 1e-12);
        assert!((normal_quantile(0.975) - 1.959_964).abs() < 1e-6);
        assert!((normal_quantile(0.01) + 2.326_348).abs() < 1e-6);
    }

    #[test]
    fn a_lognormal_keeps_its_median_mean_and_tail() {
        let d = Dist::Lognormal {
            median: Duration::from_millis(800),
            sigma: 0.5,
        };
        let s = Spread::of(&d);
        assert_eq!(s.atoms().len(), ATOMS);
        assert!((quantile(&s, 0.5) - 0.8).abs() < 0.005);
        assert!((s.mean() - 0.8 * 0.125f64.exp()).abs() < 1e-12);
        let p99 = 0.8 * (0.5 * 2.326_348f64).exp();
        assert!((quantile(&s, 0.99) / p99 - 1.0).abs() < 0.03);
        assert!((s.within(p99) - 0.99).abs() < 0.003);
    }

    #[test]
    fn sums_and_mixtures_keep_the_mean_and_the_mass() {
        let u = Spread::of(&Dist::Uniform {
            min: Duration::from_secs(1),
            max: Duration::from_secs(3),
        });
        let two = u.plus(&u);
        assert_eq!(two.atoms().len(), ATOMS);
        assert!((two.mean() - 4.0).abs() < 1e-12);
        let atoms_mean: f64 = two.atoms().iter().map(|(v, p)| v * p).sum();
        assert!((atoms_mean - 4.0).abs() < 1e-9);
        assert!((quantile(&two, 0.5) - 4.0).abs() < 0.02);
        let m = Spread::mix(&[(0.7, &Spread::point(0.0)), (0.3, &Spread::never())]);
        assert!((m.served() - 0.7).abs() < 1e-12);
        assert_eq!(m.mean(), 0.0);
        assert_eq!(m.within(0.0), 0.7);
        let shifted = Spread::point(0.5).plus(&m);
        assert_eq!(shifted.atoms(), &[(0.5, 0.7)]);
        assert!((shifted.served() - 0.7).abs() < 1e-12);
    }
}
