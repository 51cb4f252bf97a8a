#!/usr/bin/env python3
"""Writes code-sample.csv: a synthetic request trace for BubbleTea experiments.

Synthetic, not the real trace: requests drawn to match the published statistics
of the Azure LLM inference trace 2023, "code" (REFERENCES.md): 2.57 requests/s,
prompt tokens median 1469 and p90 5194. Arrivals are a Poisson process
(exponential gaps); prompt lengths are lognormal with mu = ln(median) and
sigma = ln(p90 / median) / 1.2815515655446004 (the standard normal's 90th
percentile), rounded and clamped to [1, 1000000], as the harness's own
`arrivals = { ... }` generator does. Output lengths are not published there and
do not matter to prefill: every row says 128, the output length of
splitwise-sim's performance model.

Usage: ./make-sample.py > code-sample.csv   (same seed, same file)
"""
import math
import random
import sys

RATE_PER_S = 2.57
PROMPT_MEDIAN = 1469
PROMPT_P90 = 5194
DURATION_S = 120.0
OUTPUT_TOKENS = 128
SEED = 2023
Z90 = 1.2815515655446004


def draw(rng):
    """(arrival_s, prompt_tokens) pairs for DURATION_S seconds."""
    mu = math.log(PROMPT_MEDIAN)
    sigma = math.log(PROMPT_P90 / PROMPT_MEDIAN) / Z90
    requests = []
    t = rng.expovariate(RATE_PER_S)
    while t < DURATION_S:
        requests.append((round(t, 3), min(max(round(rng.lognormvariate(mu, sigma)), 1), 1_000_000)))
        t += rng.expovariate(RATE_PER_S)
    return requests


def main():
    requests = draw(random.Random(SEED))
    prompts = sorted(prompt for _, prompt in requests)
    out = sys.stdout
    out.write(
        "# Synthetic request trace, NOT the real Azure trace: drawn by make-sample.py (seed "
        f"{SEED}) to match the published\n"
        "# statistics of the Azure LLM inference trace 2023, code: 2.57 requests/s, prompt tokens median 1469,\n"
        "# p90 5194 (REFERENCES.md). Poisson arrivals, lognormal prompt lengths; output lengths are not\n"
        f"# published there and do not matter to prefill: all {OUTPUT_TOKENS}.\n"
        f"# This sample: {len(requests)} requests in {DURATION_S:.0f} s, prompt median {prompts[len(prompts) // 2]}, "
        f"p90 {prompts[len(prompts) * 9 // 10]}.\n"
        "arrival_s,prompt_tokens,output_tokens\n")
    for arrival, prompt in requests:
        out.write(f"{arrival:.3f},{prompt},{OUTPUT_TOKENS}\n")


if __name__ == "__main__":
    main()
