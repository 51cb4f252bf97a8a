/* Types shared by the tc program (wanlab_tc.bpf.c) and the C++ control plane.
 * One definition for both sides; the C++ side static_asserts the sizes. */
#ifndef WANLAB_SHARED_H
#define WANLAB_SHARED_H

#include <linux/types.h>
#include <linux/bpf.h> /* struct bpf_spin_lock */

/* Largest number of DCs a testbed may have; pairs are indexed src * n + dst. */
#define WANLAB_MAX_DCS 128

/* The mark the program writes in nfqueue release mode: top bit says "hold this
 * packet", the low 31 bits carry the departure time in microseconds of
 * CLOCK_MONOTONIC modulo 2^31. The releaser rebuilds the full time as the value
 * nearest to its own clock (the window is +-17 minutes). */
#define WANLAB_MARK_HOLD 0x80000000u
#define WANLAB_MARK_TIME_MASK 0x7fffffffu

/* How the departure time leaves the program. */
enum wanlab_release_mode {
  WANLAB_RELEASE_FQ = 0,      /* skb->tstamp, enforced by sch_fq on egress */
  WANLAB_RELEASE_NFQUEUE = 1, /* skb->mark, enforced by the userspace releaser */
};

enum wanlab_loss_model {
  WANLAB_LOSS_BERNOULLI = 0,
  WANLAB_LOSS_GILBERT_ELLIOTT = 1,
};

/* Drop reasons, named so statistics print words, not numbers. */
enum wanlab_drop_reason {
  WANLAB_DROP_QUEUE = 0, /* departure beyond the queue limit */
  WANLAB_DROP_LOSS = 1,  /* random loss */
  WANLAB_DROP_REASONS = 2,
};

/* Flags in wanlab_pair_config.flags. */
#define WANLAB_PAIR_ENABLED 0x1u /* the pair exists; otherwise packets pass untouched */
#define WANLAB_PAIR_REORDER 0x2u /* jitter may reorder packets */

/* Key of the LPM tries that map an address to its DC index. */
struct wanlab_v4_key {
  __u32 prefixlen;
  __u8 addr[4];
};

struct wanlab_v6_key {
  __u32 prefixlen;
  __u8 addr[16];
};

/* Per directed DC pair; written by the control plane, read by the program.
 * Probabilities are fixed point: p * 2^32, saturated at 0xffffffff. */
struct wanlab_pair_config {
  __u64 rate_bps;       /* 0: unlimited */
  __u64 flow_rate_bps;  /* per 5-tuple cap, 0: none */
  __u64 delay_ns;       /* one-way propagation delay */
  __u64 jitter_ns;      /* uniform in [-jitter, +jitter], never below 0 delay */
  __u64 queue_limit_ns; /* drop when the backlog ahead would exceed this; 0: no limit */
  __u32 loss_model;     /* enum wanlab_loss_model */
  __u32 loss_p32;       /* Bernoulli: loss probability; GE: P(good -> bad) */
  __u32 ge_r32;         /* GE: P(bad -> good) */
  __u32 ge_bad_loss32;  /* GE: loss probability in the bad state (1 - h) */
  __u32 ge_good_loss32; /* GE: loss probability in the good state (1 - k) */
  __u32 flags;          /* WANLAB_PAIR_* */
  __u64 seed;           /* seeds the pair's generator when generation changes */
  __u64 generation;     /* bumped by the control plane to reset state and reseed */
};

/* Per directed DC pair, written only by the program under the lock. */
struct wanlab_pair_state {
  struct bpf_spin_lock lock;
  __u32 ge_bad;         /* Gilbert-Elliott: 1 in the bad state */
  __u64 next_free_ns;   /* when the WAN link finishes serializing what it holds */
  __u64 last_depart_ns; /* latest departure handed out (keeps order under jitter) */
  __u64 rng;            /* xorshift64* state */
  __u64 generation;     /* config generation the state was seeded for */
};

/* Per directed DC pair and per CPU; the control plane sums CPUs. */
struct wanlab_pair_stats {
  __u64 packets; /* packets passed (a GSO packet counts its segments) */
  __u64 bytes;   /* wire bytes passed */
  __u64 drops[WANLAB_DROP_REASONS];
  __u64 qdelay_sum_ns; /* sum over passed packets of the wait for the link */
  __u64 qdelay_max_ns;
};

/* 5-tuple for the per-flow cap (IPv4 addresses in the first 4 bytes). */
struct wanlab_flow_key {
  __u8 src[16];
  __u8 dst[16];
  __u16 sport;
  __u16 dport;
  __u8 proto;
  __u8 pad[3];
};

/* Per 5-tuple, in an LRU hash. No lock of its own: the kernel refuses
 * bpf_spin_lock in LRU maps, and a BPF program cannot hold two locks at once.
 * A flow's addresses decide its DC pair, so the pair's lock guards it too. */
struct wanlab_flow_state {
  __u64 next_free_ns;   /* when the flow's own cap finishes what it holds */
  __u64 last_depart_ns; /* latest departure of the flow (keeps its order under jitter) */
  __u64 generation;     /* pair config generation the state belongs to */
};

/* Schedules: a pair's rate, delay, loss and cross-traffic share over time.
 * Each scheduled pair has an array map in pair_sched (an array of maps, n^2
 * entries; pairs with equal schedules share one): entry 0 is the head,
 * entries 1..steps the steps in ascending at_ns, the first at 0. The program
 * finds the step for a packet's time itself, so a change lands at its time to
 * the nanosecond, however often the schedule changes. Replacing a pair's map
 * is one update: atomic. */
#define WANLAB_SCHED_RATE 0x1u  /* steps give rate_bps (0: nothing leaves) */
#define WANLAB_SCHED_DELAY 0x2u /* steps give delay_ns */
#define WANLAB_SCHED_LOSS 0x4u  /* steps give loss_p32 */
#define WANLAB_SCHED_SHARE 0x8u /* steps give share_p32 */
#define WANLAB_SCHED_COLUMNS 0xfu
/* Largest number of steps (128 MiB of map); a binary search over them takes
 * WANLAB_SCHED_SEARCH_ROUNDS lookups. */
#define WANLAB_SCHED_MAX_STEPS (1u << 22)
#define WANLAB_SCHED_SEARCH_ROUNDS 23

struct wanlab_sched_head {
  __u64 start_ns;  /* CLOCK_MONOTONIC of the schedule's time 0 */
  __u64 period_ns; /* the schedule repeats after this; 0: the last step holds */
  __u32 steps;     /* entries 1..steps are steps */
  __u32 columns;   /* WANLAB_SCHED_*: what the steps set; the rest is pair_config's */
  __u64 pad;
};

struct wanlab_sched_step {
  __u64 at_ns;    /* offset from the schedule's time 0 (within a period) */
  __u64 rate_bps; /* 0: the link sends nothing during this step */
  __u64 delay_ns;
  __u32 loss_p32;  /* fixed point, as in wanlab_pair_config */
  __u32 share_p32; /* share of the rate taken by cross-traffic */
};

union wanlab_sched_entry {
  struct wanlab_sched_head head;
  struct wanlab_sched_step step;
};

/* The layouts above are the ABI between the program and user space (and pinned
 * maps outlive processes): both compilers check them. */
#ifdef __cplusplus
#define WANLAB_LAYOUT_CHECK(cond, what) static_assert(cond, what)
#else
#define WANLAB_LAYOUT_CHECK(cond, what) _Static_assert(cond, what)
#endif
WANLAB_LAYOUT_CHECK(sizeof(struct wanlab_v4_key) == 8, "wanlab_v4_key layout");
WANLAB_LAYOUT_CHECK(sizeof(struct wanlab_v6_key) == 20, "wanlab_v6_key layout");
WANLAB_LAYOUT_CHECK(sizeof(struct wanlab_pair_config) == 80, "wanlab_pair_config layout");
WANLAB_LAYOUT_CHECK(sizeof(struct wanlab_pair_state) == 40, "wanlab_pair_state layout");
WANLAB_LAYOUT_CHECK(sizeof(struct wanlab_pair_stats) == 48, "wanlab_pair_stats layout");
WANLAB_LAYOUT_CHECK(sizeof(struct wanlab_flow_key) == 40, "wanlab_flow_key layout");
WANLAB_LAYOUT_CHECK(sizeof(struct wanlab_flow_state) == 24, "wanlab_flow_state layout");
WANLAB_LAYOUT_CHECK(sizeof(struct wanlab_sched_head) == 32, "wanlab_sched_head layout");
WANLAB_LAYOUT_CHECK(sizeof(struct wanlab_sched_step) == 32, "wanlab_sched_step layout");
WANLAB_LAYOUT_CHECK(sizeof(union wanlab_sched_entry) == 32, "wanlab_sched_entry layout");

#endif
