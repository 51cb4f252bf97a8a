/* The WAN emulator's data plane: a tc (direct-action) program that gives every
 * packet between two emulated DCs a departure time (rate, per-flow cap, queue
 * limit, delay, jitter) or drops it (loss, queue overflow).
 *
 * Packets whose source or destination is in no DC, or whose pair is not
 * enabled, and everything that is not IPv4/IPv6, pass untouched. The timing
 * itself lives in wanlab_edt.h; this file parses, looks up and accounts. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "wanlab_edt.h"
#include "wanlab_shared.h"

/* IPv4 fragment bits in frag_off (kernel-internal, not in the uapi headers). */
#define WANLAB_IP_MF 0x2000
#define WANLAB_IP_OFFSET 0x1fff

/* Set by the loader before load. */
const volatile __u32 num_dcs = 1;
const volatile __u32 release_mode = WANLAB_RELEASE_FQ;
/* On an interface of a host (`wanlab attach` on the fq path, a DC's gateway
 * machine of `wanlab join`): the interface the program is on and its MAC; 0
 * on a testbed's router namespace. Packets the host's own sockets send to
 * another DC are turned back in through that interface's ingress, so that IP
 * forwards them as a router forwards anyone's, and are shaped on their second
 * way out. Receiving a packet releases its
 * socket's claim on it (ip_rcv orphans it); held in fq for the pair's delay
 * while still claimed, it would count against TCP's small-queue limit (about
 * 1 ms of the socket's pacing rate) and stall the sender: measured 2.5 of 20
 * Mbit/s over 15 ms one way; with the detour as much as a member machine gets
 * (docs/SCALE-OUT.md). */
const volatile __u32 own_ifindex = 0;
const volatile __u8 own_mac[ETH_ALEN] = {};

/* Prefix tables: an address's longest matching prefix names its DC. */
struct {
  __uint(type, BPF_MAP_TYPE_LPM_TRIE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __uint(max_entries, 4096);
  __type(key, struct wanlab_v4_key);
  __type(value, __u32);
} dc_of_v4 SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_LPM_TRIE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __uint(max_entries, 4096);
  __type(key, struct wanlab_v6_key);
  __type(value, __u32);
} dc_of_v6 SEC(".maps");

/* Sends a packet of a local socket back in through the interface, addressed
 * to it, to be forwarded like any other machine's (own_ifindex). */
static __always_inline int detour_through_ingress(struct __sk_buff* skb) {
  __u8 mac[ETH_ALEN];

  /* Read as volatile: through a plain pointer clang would take the
   * initializer's zeros, not what the loader wrote. */
#pragma unroll
  for (int i = 0; i < ETH_ALEN; i++) mac[i] = own_mac[i];
  if (bpf_skb_store_bytes(skb, offsetof(struct ethhdr, h_dest), mac, ETH_ALEN, 0) < 0) return TC_ACT_SHOT;
  return bpf_redirect(own_ifindex, BPF_F_INGRESS);
}

/* The three pair maps hold num_dcs^2 entries (the loader sizes them),
 * indexed src * num_dcs + dst. */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct wanlab_pair_config);
} pair_config SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct wanlab_pair_state);
} pair_state SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct wanlab_pair_stats);
} pair_stats SEC(".maps");

/* A pair's schedule (wanlab_shared.h): an array map, head at 0. The control
 * plane makes one per distinct schedule, sized to its steps (BPF_F_INNER_MAP
 * lets the sizes differ); pairs with equal schedules point at the same one. */
struct wanlab_sched_map {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(map_flags, BPF_F_INNER_MAP);
  __uint(max_entries, 2);
  /* Sizes, not BTF types: clang leaves the value's type a forward
   * declaration inside an array of maps, which libbpf cannot size. */
  __uint(key_size, sizeof(__u32));
  __uint(value_size, sizeof(union wanlab_sched_entry));
};

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
  __uint(max_entries, 1);
  __type(key, __u32);
  __array(values, struct wanlab_sched_map);
} pair_sched SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 65536);
  __type(key, struct wanlab_flow_key);
  __type(value, struct wanlab_flow_state);
} flow_state SEC(".maps");

/* What the program needs to know about a packet. */
struct wanlab_packet {
  struct wanlab_flow_key flow; /* addresses always; ports for TCP/UDP */
  __u32 header_len;            /* L2 + L3 + L4 bytes every GSO segment repeats */
  __u8 v6;
  __u8 has_ports; /* TCP or UDP with its header present (not a later fragment) */
};

/* Reads the TCP/UDP header at off; other protocols have no ports. Returns -1
 * for a TCP/UDP packet too short to hold its header. */
static __always_inline int parse_l4(struct __sk_buff* skb, __u32 off, __u8 proto, struct wanlab_packet* pkt) {
  pkt->flow.proto = proto;
  pkt->header_len = off;
  if (proto == IPPROTO_TCP) {
    struct tcphdr tcp;

    if (bpf_skb_load_bytes(skb, off, &tcp, sizeof(tcp)) < 0) return -1;
    pkt->flow.sport = tcp.source;
    pkt->flow.dport = tcp.dest;
    pkt->header_len = off + tcp.doff * 4;
    pkt->has_ports = 1;
  } else if (proto == IPPROTO_UDP) {
    struct udphdr udp;

    if (bpf_skb_load_bytes(skb, off, &udp, sizeof(udp)) < 0) return -1;
    pkt->flow.sport = udp.source;
    pkt->flow.dport = udp.dest;
    pkt->header_len = off + sizeof(udp);
    pkt->has_ports = 1;
  }
  return 0;
}

static __always_inline int parse_v4(struct __sk_buff* skb, struct wanlab_packet* pkt) {
  struct iphdr ip;

  if (bpf_skb_load_bytes(skb, ETH_HLEN, &ip, sizeof(ip)) < 0 || ip.ihl < 5) return -1;
  __builtin_memcpy(pkt->flow.src, &ip.saddr, 4);
  __builtin_memcpy(pkt->flow.dst, &ip.daddr, 4);
  /* Fragments carry no (or partial) ports: keep all of a datagram's
   * fragments out of the flow table alike. */
  if (ip.frag_off & bpf_htons(WANLAB_IP_MF | WANLAB_IP_OFFSET)) {
    pkt->flow.proto = ip.protocol;
    pkt->header_len = ETH_HLEN + ip.ihl * 4;
    return 0;
  }
  return parse_l4(skb, ETH_HLEN + ip.ihl * 4, ip.protocol, pkt);
}

/* Extension headers are not walked: such packets are classified by address
 * but get no ports (no per-flow cap). */
static __always_inline int parse_v6(struct __sk_buff* skb, struct wanlab_packet* pkt) {
  struct ipv6hdr ip6;

  if (bpf_skb_load_bytes(skb, ETH_HLEN, &ip6, sizeof(ip6)) < 0) return -1;
  pkt->v6 = 1;
  __builtin_memcpy(pkt->flow.src, &ip6.saddr, 16);
  __builtin_memcpy(pkt->flow.dst, &ip6.daddr, 16);
  return parse_l4(skb, ETH_HLEN + sizeof(ip6), ip6.nexthdr, pkt);
}

/* Returns -1 for anything that is not a well-formed IPv4/IPv6 packet. */
static __always_inline int parse(struct __sk_buff* skb, struct wanlab_packet* pkt) {
  if (skb->protocol == bpf_htons(ETH_P_IP)) return parse_v4(skb, pkt);
  if (skb->protocol == bpf_htons(ETH_P_IPV6)) return parse_v6(skb, pkt);
  return -1;
}

static __always_inline __u32* dc_of(const struct wanlab_packet* pkt, const __u8* addr) {
  if (pkt->v6) {
    struct wanlab_v6_key key = {.prefixlen = 128};

    __builtin_memcpy(key.addr, addr, 16);
    return bpf_map_lookup_elem(&dc_of_v6, &key);
  }
  struct wanlab_v4_key key = {.prefixlen = 32};

  __builtin_memcpy(key.addr, addr, 4);
  return bpf_map_lookup_elem(&dc_of_v4, &key);
}

/* The flow's state, created on its first packet. NULL when the table cannot
 * take it: the packet then goes without the flow cap rather than be dropped. */
static __always_inline struct wanlab_flow_state* flow_of(const struct wanlab_flow_key* key) {
  struct wanlab_flow_state fresh = {};
  struct wanlab_flow_state* flow = bpf_map_lookup_elem(&flow_state, key);

  if (flow) return flow;
  bpf_map_update_elem(&flow_state, key, &fresh, BPF_NOEXIST);
  return bpf_map_lookup_elem(&flow_state, key);
}

/* The scheduled step a packet is charged against, and when the link may
 * start it. */
struct sched_pick {
  struct wanlab_sched_step step;
  __u64 end_ns;        /* absolute end of the step; ~0: it holds forever */
  __u64 not_before_ns; /* the end of the pause skipped to reach it; 0: none */
  __u32 columns;       /* the schedule's WANLAB_SCHED_* */
};

static __always_inline const struct wanlab_sched_step* sched_step(void* sched, __u32 index) {
  const union wanlab_sched_entry* entry = bpf_map_lookup_elem(sched, &index);

  return entry ? &entry->step : NULL;
}

/* A binary search for the last step at or before offset_ns over entries
 * lo..hi, one halving per bpf_loop round (the verifier checks the callback
 * once, where an unrolled loop of lookups blows its budget). */
struct sched_search {
  void* sched;
  __u64 offset_ns;
  __u32 lo;
  __u32 hi;
};

static long sched_halve(__u32 round, void* data) {
  struct sched_search* search = data;
  const struct wanlab_sched_step* step;
  __u32 mid;

  (void)round;
  if (search->lo >= search->hi) return 1;
  mid = search->lo + (search->hi - search->lo + 1) / 2;
  step = sched_step(search->sched, mid);
  if (!step) {
    search->lo = 0;
    return 1;
  }
  if (step->at_ns <= search->offset_ns)
    search->lo = mid;
  else
    search->hi = mid - 1;
  return 0;
}

/* The index of the step in effect at offset_ns; 0 if the map is not a
 * schedule. */
static __always_inline __u32 sched_index(void* sched, __u32 steps, __u64 offset_ns) {
  struct sched_search search = {sched, offset_ns, 1, steps};

  if (steps == 0) return 0;
  bpf_loop(WANLAB_SCHED_SEARCH_ROUNDS, sched_halve, &search, 0);
  return search.lo < search.hi ? 0 : search.lo;
}

/* The step in effect at time t. Returns -1 if the map is not a schedule. */
static __always_inline int sched_at(void* sched, const struct wanlab_sched_head* head, __u64 t_ns,
                                    struct sched_pick* pick) {
  struct wanlab_sched_pos pos = wanlab_edt_sched_pos(head, t_ns);
  const struct wanlab_sched_step *step, *next;
  __u32 index = sched_index(sched, head->steps, pos.offset_ns);

  step = index ? sched_step(sched, index) : NULL;
  if (!step) return -1;
  pick->step = *step;
  next = index < head->steps ? sched_step(sched, index + 1) : NULL;
  if (next)
    pick->end_ns = pos.base_ns + next->at_ns;
  else
    pick->end_ns = head->period_ns ? pos.base_ns + head->period_ns : ~0ull;
  return 0;
}

/* The step a packet that the link would start at t_ns is charged against:
 * the one in effect then, or, when that one pauses the link, the next step
 * that does not (the control plane merges equal neighbours, so a pause is
 * followed by a step that sends, at most one wrap later). Returns -1 when
 * none sends: the link is down for good. */
static __always_inline int sched_pick(void* sched, const struct wanlab_pair_config* cfg, __u64 t_ns,
                                      struct sched_pick* pick) {
  const union wanlab_sched_entry* head_entry;
  struct wanlab_sched_head head;
  __u32 zero = 0;
  int tries;

  head_entry = bpf_map_lookup_elem(sched, &zero);
  if (!head_entry) return -1;
  head = head_entry->head;
  for (tries = 0; tries < 3; tries++) {
    if (sched_at(sched, &head, t_ns, pick) < 0) return -1;
    if (!wanlab_edt_sched_paused(cfg, head.columns, &pick->step)) {
      pick->columns = head.columns;
      return 0;
    }
    if (pick->end_ns == ~0ull) return -1;
    t_ns = pick->end_ns;
    pick->not_before_ns = t_ns;
  }
  return -1;
}

SEC("tc")
int wanlab_tc(struct __sk_buff* skb) {
  struct wanlab_packet pkt = {};
  struct wanlab_edt_result res = {};
  struct wanlab_pair_config* cfg;
  struct wanlab_pair_state* state;
  struct wanlab_pair_stats* stats;
  struct wanlab_flow_state* flow = NULL;
  struct wanlab_pair_config eff;
  struct sched_pick pick = {};
  void* sched;
  __u32 *src_dc, *dst_dc, pair, segs, verdict;
  __u64 wire, now, earliest;

  if (parse(skb, &pkt) < 0) return TC_ACT_OK;
  src_dc = dc_of(&pkt, pkt.flow.src);
  dst_dc = dc_of(&pkt, pkt.flow.dst);
  if (!src_dc || !dst_dc || *src_dc >= num_dcs || *dst_dc >= num_dcs) return TC_ACT_OK;
  pair = *src_dc * num_dcs + *dst_dc;
  cfg = bpf_map_lookup_elem(&pair_config, &pair);
  if (!cfg || !(cfg->flags & WANLAB_PAIR_ENABLED)) return TC_ACT_OK;
  if (own_ifindex && skb->sk && *src_dc != *dst_dc) return detour_through_ingress(skb);
  state = bpf_map_lookup_elem(&pair_state, &pair);
  stats = bpf_map_lookup_elem(&pair_stats, &pair);
  if (!state || !stats) return TC_ACT_OK;

  segs = wanlab_edt_segments(skb->gso_segs);
  wire = wanlab_edt_wire_bytes(skb->len, skb->gso_segs, pkt.header_len);
  /* Looked up before taking the pair's lock: no helper calls under it. */
  if (cfg->flow_rate_bps && pkt.has_ports) flow = flow_of(&pkt.flow);

  now = bpf_ktime_get_ns();
  eff = *cfg;
  earliest = now;
  sched = bpf_map_lookup_elem(&pair_sched, &pair);
  if (sched) {
    /* The packet is charged against the step the link starts it in.
     * The backlog is read without the lock (helpers may not run under
     * it); a packet another CPU slips in meanwhile moves the start by
     * that packet's serialization time. */
    __u64 start = wanlab_edt_max(now, *(volatile __u64*)&state->next_free_ns);

    if (sched_pick(sched, cfg, start, &pick) < 0) {
      stats->drops[WANLAB_DROP_QUEUE] += segs;
      return TC_ACT_SHOT;
    }
    wanlab_edt_sched_apply(&eff, pick.columns, &pick.step);
    earliest = wanlab_edt_max(now, pick.not_before_ns);
  }
  bpf_spin_lock(&state->lock);
  verdict = wanlab_edt_step_from(&eff, state, flow, now, earliest, wire, &res);
  bpf_spin_unlock(&state->lock);

  if (verdict == WANLAB_EDT_DROP) {
    if (res.drop_reason < WANLAB_DROP_REASONS) stats->drops[res.drop_reason] += segs;
    return TC_ACT_SHOT;
  }
  stats->packets += segs;
  stats->bytes += wire;
  stats->qdelay_sum_ns += (res.start_ns - now) * segs;
  if (res.start_ns - now > stats->qdelay_max_ns) stats->qdelay_max_ns = res.start_ns - now;

  if (release_mode == WANLAB_RELEASE_NFQUEUE) {
    __u32 mark = wanlab_edt_hold_mark(res.depart_ns, now);

    if (mark) skb->mark = mark;
  } else {
    skb->tstamp = res.depart_ns;
  }
  return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
