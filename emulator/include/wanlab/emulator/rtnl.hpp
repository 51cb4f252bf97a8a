// rtnetlink over libmnl: the links, addresses, routes, qdiscs and tc filters a
// testbed needs. Each request is built as an owned message and sent by one
// round-trip function that waits for the kernel's ACK; errors name the request.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "wanlab/emulator/scenario.hpp"

struct mnl_socket;
struct nlmsghdr;

namespace wanlab::emulator {

// An rtnetlink message under construction (owned bytes).
class NetlinkMessage {
 public:
  explicit NetlinkMessage(std::uint16_t type, std::uint16_t flags);
  nlmsghdr* header();
  const std::vector<char>& bytes() const { return buffer_; }

 private:
  std::vector<char> buffer_;
};

struct FqOptions {
  std::uint32_t packet_limit = 1'000'000;                // TCA_FQ_PLIMIT
  std::uint32_t flow_packet_limit = 100'000;             // TCA_FQ_FLOW_PLIMIT: a WAN flow holds a BDP
  std::uint32_t horizon_us = 3 * kMaxHoldPartNs / 1000;  // departures up to 60 s ahead are kept
};

// A root qdisc someone configured (the kernel's defaults have handle 0).
struct RootQdisc {
  std::string kind;      // "htb", "tbf", "netem", ...
  std::uint32_t handle;  // major:minor as the kernel holds it
};

// Builders, exposed so tests can check them byte for byte.
NetlinkMessage veth_message(const std::string& name, const std::string& peer_name, int peer_netns_fd);
// A direct-action bpf filter at the clsact hook, with the given priority and handle.
NetlinkMessage bpf_filter_message(int ifindex, bool ingress, int prog_fd, const std::string& prog_name,
                                  std::uint32_t priority = 1, std::uint32_t handle = 1);

class Rtnl {
 public:
  // Opens an rtnetlink socket in the calling thread's network namespace.
  Rtnl();
  ~Rtnl();
  Rtnl(const Rtnl&) = delete;
  Rtnl& operator=(const Rtnl&) = delete;

  int link_index(const std::string& name) const;  // throws if absent
  void add_veth(const std::string& name, const std::string& peer_name, int peer_netns_fd);
  void set_up(int ifindex);
  void add_address_v4(int ifindex, std::uint32_t addr, int prefix_len);
  // Route to dst/len out of `oif`, through `gateway` if given (on-link).
  void add_route_v4(std::uint32_t dst, int dst_len, int oif, std::optional<std::uint32_t> gateway);
  using Ipv6 = std::array<std::uint8_t, 16>;
  // Without duplicate address detection: our links have one peer, and DAD
  // would keep the address unusable for a second.
  // Only the route with this gateway and interface (the one add_route_v4 made).
  void delete_route_v4(std::uint32_t dst, int dst_len, int oif, std::uint32_t gateway);
  void add_address_v6(int ifindex, const Ipv6& addr, int prefix_len);
  void add_route_v6(const Ipv6& dst, int dst_len, int oif, std::optional<Ipv6> gateway);
  void add_clsact(int ifindex);
  void add_bpf_filter(int ifindex, bool ingress, int prog_fd, const std::string& prog_name, std::uint32_t priority = 1,
                      std::uint32_t handle = 1);
  // Every filter at the hook (for interfaces that are all ours).
  void delete_bpf_filters(int ifindex, bool ingress);
  // Just the bpf filter with this priority and handle.
  void delete_bpf_filter(int ifindex, bool ingress, std::uint32_t priority, std::uint32_t handle);
  void delete_clsact(int ifindex);
  void add_fq_root(int ifindex, const FqOptions& options);
  void delete_root_qdisc(int ifindex);
  // The interface's root qdisc if someone configured one, none for the kernel's default.
  std::optional<RootQdisc> configured_root_qdisc(int ifindex);

  // Sends the message, waits for the ACK; throws std::system_error(what).
  void transact(NetlinkMessage& message, const std::string& what);
  // The same, handing each message of the reply (a dump's too) to `callback`.
  void transact(NetlinkMessage& message, const std::string& what, int (*callback)(const nlmsghdr*, void*), void* data);

 private:
  mnl_socket* socket_ = nullptr;
  std::uint32_t port_id_ = 0;
  std::uint32_t next_seq_ = 1;
};

std::string ipv4_to_string(std::uint32_t addr_host_order);
std::string ipv6_to_string(const std::array<std::uint8_t, 16>& addr);

}  // namespace wanlab::emulator
