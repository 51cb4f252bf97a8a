/* The departure-time (EDT) arithmetic of the tc program: pure functions of a
 * pair's config, its state, the time and the packet's wire size. The program
 * (wanlab_tc.bpf.c) calls them under the pair's spin lock, so nothing here may
 * call a helper or a non-inlined function; C++ includes this header too
 * (tests/unit/edt.cpp tests it directly, the releaser decodes marks with it).
 * This is the one definition of the emulation's timing. */
#ifndef WANLAB_EDT_H
#define WANLAB_EDT_H

#include "wanlab_shared.h"

/* Inlined everywhere: the verifier refuses calls while a spin lock is held. */
#define WANLAB_EDT_INLINE static inline __attribute__((always_inline))

#define WANLAB_NSEC_PER_SEC 1000000000ull
/* Wire sizes are capped here so that bits * 1e9 fits in 64 bits (2^30 * 8e9 < 2^63).
 * No real packet, GSO or not, comes near. */
#define WANLAB_EDT_MAX_WIRE_BYTES (1ull << 30)
/* NFQUEUE mode: a packet due this close to now is not worth holding. */
#define WANLAB_EDT_HOLD_MIN_NS 1000ull

/* Results of wanlab_edt_step. */
enum wanlab_edt_verdict {
  WANLAB_EDT_PASS = 0,
  WANLAB_EDT_DROP = 1,
};

struct wanlab_edt_result {
  __u64 start_ns;    /* when the link starts serializing the packet (>= now) */
  __u64 depart_ns;   /* when the packet leaves the emulated WAN */
  __u32 drop_reason; /* enum wanlab_drop_reason, set when dropped */
  __u32 pad;
};

/* Bytes the packet occupies on the wire. A GSO packet becomes gso_segs
 * segments that each carry the headers (header_len = L2 + L3 + L4), while
 * len counts them once. */
WANLAB_EDT_INLINE __u64 wanlab_edt_wire_bytes(__u32 len, __u32 gso_segs, __u32 header_len) {
  if (gso_segs <= 1) return len;
  return (__u64)len + (__u64)(gso_segs - 1) * header_len;
}

/* Packets the skb is on the wire: its GSO segments, at least one. */
WANLAB_EDT_INLINE __u32 wanlab_edt_segments(__u32 gso_segs) { return gso_segs > 1 ? gso_segs : 1; }

/* Serialization time of wire_bytes at rate_bps, rounded up so that the
 * emulated link never runs faster than its rate. Rate 0 is unlimited. */
WANLAB_EDT_INLINE __u64 wanlab_edt_tx_ns(__u64 wire_bytes, __u64 rate_bps) {
  __u64 bit_ns, tx;

  if (rate_bps == 0) return 0;
  if (wire_bytes > WANLAB_EDT_MAX_WIRE_BYTES) wire_bytes = WANLAB_EDT_MAX_WIRE_BYTES;
  bit_ns = wire_bytes * 8 * WANLAB_NSEC_PER_SEC;
  tx = bit_ns / rate_bps;
  if (tx * rate_bps != bit_ns) tx++;
  return tx;
}

/* xorshift64*: the pair's generator. *rng must not be 0. */
WANLAB_EDT_INLINE __u64 wanlab_edt_random(__u64* rng) {
  __u64 x = *rng;

  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *rng = x;
  return x * 0x2545f4914f6cdd1dull;
}

/* The generator's first state for a seed: splitmix64 of it, a bijection, so
 * distinct seeds give distinct streams (seed | 1 would merge 2k and 2k+1) and
 * small seeds start well mixed. The one seed mapping to 0, xorshift's fixed
 * point, gets a constant instead. */
WANLAB_EDT_INLINE __u64 wanlab_edt_seed_state(__u64 seed) {
  __u64 z = seed + 0x9e3779b97f4a7c15ull;

  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return z ? z : 0x9e3779b97f4a7c15ull;
}

/* True with probability p32 / 2^32; 0xffffffff (saturated 1.0) is certain.
 * Draws from the generator only when the outcome is uncertain. */
WANLAB_EDT_INLINE int wanlab_edt_chance(__u64* rng, __u32 p32) {
  if (p32 == 0) return 0;
  if (p32 == 0xffffffffu) return 1;
  return (__u32)(wanlab_edt_random(rng) >> 32) < p32;
}

/* delay_ns plus a jitter uniform in [-jitter_ns, +jitter_ns], never below 0. */
WANLAB_EDT_INLINE __u64 wanlab_edt_latency_ns(__u64* rng, __u64 delay_ns, __u64 jitter_ns) {
  __u64 offset, total;

  if (jitter_ns == 0) return delay_ns;
  /* 2j + 1 is odd, so never 0: no division by zero even if it wraps. */
  offset = wanlab_edt_random(rng) % (2 * jitter_ns + 1);
  total = delay_ns + offset;
  return total > jitter_ns ? total - jitter_ns : 0;
}

/* One Gilbert-Elliott step: move between the good and the bad state, then
 * lose the packet with the new state's loss probability. */
WANLAB_EDT_INLINE int wanlab_edt_ge_lose(const struct wanlab_pair_config* cfg, struct wanlab_pair_state* st) {
  if (st->ge_bad) {
    if (wanlab_edt_chance(&st->rng, cfg->ge_r32)) st->ge_bad = 0;
  } else if (wanlab_edt_chance(&st->rng, cfg->loss_p32)) {
    st->ge_bad = 1;
  }
  return wanlab_edt_chance(&st->rng, st->ge_bad ? cfg->ge_bad_loss32 : cfg->ge_good_loss32);
}

WANLAB_EDT_INLINE int wanlab_edt_lose(const struct wanlab_pair_config* cfg, struct wanlab_pair_state* st) {
  if (cfg->loss_model == (__u32)WANLAB_LOSS_GILBERT_ELLIOTT) return wanlab_edt_ge_lose(cfg, st);
  return wanlab_edt_chance(&st->rng, cfg->loss_p32);
}

/* A new config generation restarts the pair: empty link, generator reseeded.
 * rng 0 means a state never seeded (the map starts zeroed). Touches every
 * field but the lock, which the verifier forbids writing. */
WANLAB_EDT_INLINE void wanlab_edt_sync_pair(const struct wanlab_pair_config* cfg, struct wanlab_pair_state* st) {
  if (st->generation == cfg->generation && st->rng != 0) return;
  st->ge_bad = 0;
  st->next_free_ns = 0;
  st->last_depart_ns = 0;
  st->rng = wanlab_edt_seed_state(cfg->seed);
  st->generation = cfg->generation;
}

WANLAB_EDT_INLINE void wanlab_edt_sync_flow(const struct wanlab_pair_config* cfg, struct wanlab_flow_state* flow) {
  if (flow->generation == cfg->generation) return;
  flow->next_free_ns = 0;
  flow->last_depart_ns = 0;
  flow->generation = cfg->generation;
}

/* How long a packet arriving now waits for a server free at next_free_ns. */
WANLAB_EDT_INLINE __u64 wanlab_edt_backlog_ns(__u64 next_free_ns, __u64 now_ns) {
  return next_free_ns > now_ns ? next_free_ns - now_ns : 0;
}

WANLAB_EDT_INLINE __u64 wanlab_edt_max(__u64 a, __u64 b) { return a > b ? a : b; }

/* The whole per-packet decision for one pair: loss, queue limit, link
 * serialization, per-flow cap, delay and jitter, ordering.
 *
 * flow is the packet's per-flow state when the pair has a flow cap and the
 * packet is TCP or UDP, else NULL. A flow's addresses decide its pair, so the
 * pair's lock (held by the caller) covers the flow state as well; that lets
 * one critical section commit the link and the flow together, and a dropped
 * packet consumes neither.
 *
 * The link is one FIFO server: a packet starts when the link is free and
 * leaves it when its last bit is out. The flow cap is a second server per
 * flow, fed at arrival; the packet is ready when both are done with it.
 * Without WANLAB_PAIR_REORDER, departures never overtake earlier ones in the
 * same queue: the pair's queue, or the flow's own queue when it has a flow
 * cap (flows capped separately must not wait behind each other).
 *
 * The link starts no packet before earliest_ns (a scheduled step with rate 0
 * pauses it until the next step; wanlab_edt_step passes now_ns).
 *
 * Returns WANLAB_EDT_PASS with res->start_ns and res->depart_ns, or
 * WANLAB_EDT_DROP with res->drop_reason; a dropped packet leaves the link and
 * flow schedules as they were. */
WANLAB_EDT_INLINE int wanlab_edt_step_from(const struct wanlab_pair_config* cfg, struct wanlab_pair_state* st,
                                           struct wanlab_flow_state* flow, __u64 now_ns, __u64 earliest_ns,
                                           __u64 wire_bytes, struct wanlab_edt_result* res) {
  __u64 link_backlog, flow_backlog = 0, ready, depart;

  wanlab_edt_sync_pair(cfg, st);
  if (flow) wanlab_edt_sync_flow(cfg, flow);

  if (wanlab_edt_lose(cfg, st)) {
    res->drop_reason = WANLAB_DROP_LOSS;
    return WANLAB_EDT_DROP;
  }

  link_backlog = wanlab_edt_backlog_ns(wanlab_edt_max(st->next_free_ns, earliest_ns), now_ns);
  if (flow) flow_backlog = wanlab_edt_backlog_ns(flow->next_free_ns, now_ns);
  if (cfg->queue_limit_ns && (link_backlog > cfg->queue_limit_ns || flow_backlog > cfg->queue_limit_ns)) {
    res->drop_reason = WANLAB_DROP_QUEUE;
    return WANLAB_EDT_DROP;
  }

  res->start_ns = now_ns + link_backlog;
  st->next_free_ns = res->start_ns + wanlab_edt_tx_ns(wire_bytes, cfg->rate_bps);
  ready = st->next_free_ns;
  if (flow) {
    flow->next_free_ns = now_ns + flow_backlog + wanlab_edt_tx_ns(wire_bytes, cfg->flow_rate_bps);
    ready = wanlab_edt_max(ready, flow->next_free_ns);
  }

  depart = ready + wanlab_edt_latency_ns(&st->rng, cfg->delay_ns, cfg->jitter_ns);
  if (!(cfg->flags & WANLAB_PAIR_REORDER)) {
    if (flow) {
      depart = wanlab_edt_max(depart, flow->last_depart_ns);
      flow->last_depart_ns = depart;
    } else {
      depart = wanlab_edt_max(depart, st->last_depart_ns);
      st->last_depart_ns = depart;
    }
  }
  res->depart_ns = depart;
  return WANLAB_EDT_PASS;
}

WANLAB_EDT_INLINE int wanlab_edt_step(const struct wanlab_pair_config* cfg, struct wanlab_pair_state* st,
                                      struct wanlab_flow_state* flow, __u64 now_ns, __u64 wire_bytes,
                                      struct wanlab_edt_result* res) {
  return wanlab_edt_step_from(cfg, st, flow, now_ns, now_ns, wire_bytes, res);
}

/* ---- schedules (wanlab_shared.h: wanlab_sched_*) ---- */

/* Where time t falls in a schedule: the offset within the current period and
 * the absolute time that period began. Before start_ns, the first step. */
struct wanlab_sched_pos {
  __u64 offset_ns;
  __u64 base_ns;
};

WANLAB_EDT_INLINE struct wanlab_sched_pos wanlab_edt_sched_pos(const struct wanlab_sched_head* head, __u64 t_ns) {
  struct wanlab_sched_pos pos = {0, head->start_ns};

  if (t_ns <= head->start_ns) return pos;
  pos.offset_ns = t_ns - head->start_ns;
  if (head->period_ns) {
    __u64 cycles = pos.offset_ns / head->period_ns;

    pos.base_ns = head->start_ns + cycles * head->period_ns;
    pos.offset_ns -= cycles * head->period_ns;
  }
  return pos;
}

/* rate x (1 - share): what cross-traffic leaves of the link. A share of 1
 * (saturated) leaves nothing. */
WANLAB_EDT_INLINE __u64 wanlab_edt_rate_left(__u64 rate_bps, __u32 share_p32) {
  __u64 keep = (1ull << 32) - share_p32;

  if (share_p32 == 0xffffffffu) return 0;
  return (rate_bps >> 32) * keep + (((rate_bps & 0xffffffffull) * keep) >> 32);
}

/* The link rate during a step: the step's or the pair's, less the step's
 * cross-traffic share. 0 with the pair's rate unlimited and no share means
 * unlimited; anything else that comes to 0 pauses the link. */
WANLAB_EDT_INLINE __u64 wanlab_edt_sched_rate(const struct wanlab_pair_config* cfg, __u32 columns,
                                              const struct wanlab_sched_step* step) {
  __u64 rate = (columns & WANLAB_SCHED_RATE) ? step->rate_bps : cfg->rate_bps;

  if (columns & WANLAB_SCHED_SHARE) rate = wanlab_edt_rate_left(rate, step->share_p32);
  return rate;
}

/* Whether the link sends nothing during the step. */
WANLAB_EDT_INLINE int wanlab_edt_sched_paused(const struct wanlab_pair_config* cfg, __u32 columns,
                                              const struct wanlab_sched_step* step) {
  if (!(columns & (WANLAB_SCHED_RATE | WANLAB_SCHED_SHARE))) return 0;
  return wanlab_edt_sched_rate(cfg, columns, step) == 0;
}

/* The pair's config as the step changes it (only the columns it has). */
WANLAB_EDT_INLINE void wanlab_edt_sched_apply(struct wanlab_pair_config* cfg, __u32 columns,
                                              const struct wanlab_sched_step* step) {
  cfg->rate_bps = wanlab_edt_sched_rate(cfg, columns, step);
  if (columns & WANLAB_SCHED_DELAY) cfg->delay_ns = step->delay_ns;
  if (columns & WANLAB_SCHED_LOSS) cfg->loss_p32 = step->loss_p32;
}

/* NFQUEUE release: the mark for a packet due at depart_ns (microseconds of
 * CLOCK_MONOTONIC modulo 2^31 under the hold bit), or 0 when it is due within
 * WANLAB_EDT_HOLD_MIN_NS of now and need not be held. */
WANLAB_EDT_INLINE __u32 wanlab_edt_hold_mark(__u64 depart_ns, __u64 now_ns) {
  if (depart_ns <= now_ns + WANLAB_EDT_HOLD_MIN_NS) return 0;
  return WANLAB_MARK_HOLD | (__u32)((depart_ns / 1000) & WANLAB_MARK_TIME_MASK);
}

/* The releaser's side (emulator/src/daemon/releaser.cpp): the departure time (ns) a
 * hold mark stands for, the one decoding of the mark. A departure is never
 * more than 60 s ahead (kMaxHoldPartNs x 3), so a mark less than half the
 * period (2^30 us, about 17.9 minutes) ahead of now_ns is in the future and
 * comes back to the microsecond, across the wrap of the counter; any other
 * mark lies in the past, and a departure in the past is due now: now_ns. */
WANLAB_EDT_INLINE __u64 wanlab_edt_mark_depart_ns(__u32 mark, __u64 now_ns) {
  __u64 now_us = now_ns / 1000;
  __u32 ahead = (mark - (__u32)now_us) & WANLAB_MARK_TIME_MASK;

  if (ahead >= (WANLAB_MARK_TIME_MASK + 1u) / 2) return now_ns;
  return (now_us + ahead) * 1000;
}

#endif
