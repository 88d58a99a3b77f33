#!/usr/bin/env python3
"""Polynomial coefficients of nx_f32_math.nx and nx_f32_trig.nx, and how they were fitted.

Each tail function (what is left of the function after the terms the code computes exactly)
is fitted on Chebyshev nodes of its interval by iteratively reweighted least squares on the
error relative to the whole function (a cheap approach to minimax), against mpmath at 120 bits;
the coefficients are then rounded to float32. Prints the coefficients as float32 bit patterns
(the .nx constants) and the fit's max relative error.

  exp   (e^r - 1 - r - r^2/2) / r^3          |r| <= ln2/2     -> NX_F32_EXPK_P0..P5
  sin   (sin r - r + r^3/6) / r^5 in r^2      |r| <= pi/4      -> NX_F32_SIN_S1..S3
  cos   (cos r - 1 + r^2/2) / r^4 in r^2      |r| <= pi/4      -> NX_F32_COS_C0..C3
  tanh  (tanh x - x) / x^3 in x^2             |x| <= 0.13      -> NX_F32_TANH_T0..T3
  log   (2 atanh s - 2s - 2s^3/3) / s^5 in s^2  |s| <= 0.1733  -> NX_F32_LOG_L1..L3

Usage: python bench/f32_math_fit.py   (about a minute: mpmath on 4,000 nodes per fit)
"""
from __future__ import annotations

import struct

import mpmath as mp
import numpy as np

mp.mp.prec = 120


def fit(f, lo, hi, powers, rel, n=4000, rounds=30):
    k = np.arange(n)
    xs = (lo + hi) / 2 + (hi - lo) / 2 * np.cos(np.pi * (k + 0.5) / n)
    target = np.array([float(f(mp.mpf(x))) for x in xs])
    A = np.stack([xs ** p for p in powers], 1)
    w = 1 / np.abs(rel(xs))
    for i in range(rounds):
        c, *_ = np.linalg.lstsq(A * w[:, None], target * w, rcond=None)
        err = (A @ c - target) / rel(xs)
        if i < rounds - 1:
            w = w * (np.abs(err) / np.abs(err).max()) ** 0.5 + 1e-30
    return c, float(np.abs(err).max())


def tail(expr, at_zero):
    def f(x):
        return at_zero if abs(x) < 1e-4 else expr(x)
    return f


def main():
    ln2h = float(mp.log(2) / 2) + 1e-3
    pio4 = float(mp.pi / 4) * 1.001
    fits = {
        "exp": (tail(lambda r: (mp.exp(r) - 1 - r - r * r / 2) / r ** 3, mp.mpf(1) / 6), -ln2h, ln2h,
                range(6), lambda x: np.exp(x) / np.maximum(np.abs(x) ** 3, 1e-300)),
        "sin": (tail(lambda r: (mp.sin(r) - r + r ** 3 / 6) / r ** 5, mp.mpf(1) / 120), 1e-3, pio4,
                [0, 2, 4], lambda x: np.sin(x) / x ** 5),
        "cos": (tail(lambda r: (mp.cos(r) - 1 + r * r / 2) / r ** 4, mp.mpf(1) / 24), 1e-6, pio4,
                [0, 2, 4, 6], lambda x: np.cos(x) / x ** 4),
        "tanh": (tail(lambda x: (mp.tanh(x) - x) / x ** 3, -mp.mpf(1) / 3), 1e-6, 0.13,
                 [0, 2, 4, 6], lambda x: np.tanh(x) / x ** 3),
        "log": (tail(lambda s: (2 * mp.atanh(s) - 2 * s - 2 * s ** 3 / 3) / s ** 5, mp.mpf(2) / 5), 1e-3,
                0.1716 * 1.01, [0, 2, 4], lambda x: 2 * np.arctanh(x) / x ** 5),
    }
    for name, (f, lo, hi, powers, rel) in fits.items():
        c, e = fit(f, lo, hi, powers, rel)
        bits = [hex(struct.unpack("<I", struct.pack("<f", v))[0]).upper().replace("X", "x") for v in c]
        print(f"{name:5s} max rel error {e:.2e}: " + ", ".join(f"{b} ({np.float32(v):.8g})" for b, v in zip(bits, c)))


if __name__ == "__main__":
    main()
