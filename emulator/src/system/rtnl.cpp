#include "wanlab/emulator/rtnl.hpp"

#include <arpa/inet.h>
#include <net/if.h>
#include <libmnl/libmnl.h>
#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <linux/pkt_cls.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>

#include "wanlab/base/sys.hpp"

namespace wanlab::emulator {
namespace {

constexpr std::uint16_t kCreate = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL;

ifinfomsg* put_ifinfo(nlmsghdr* nlh) {
  auto* ifi = static_cast<ifinfomsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ifinfomsg)));
  ifi->ifi_family = AF_UNSPEC;
  return ifi;
}

tcmsg* put_tcmsg(nlmsghdr* nlh, int ifindex, std::uint32_t parent, std::uint32_t handle) {
  auto* tcm = static_cast<tcmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(tcmsg)));
  tcm->tcm_family = AF_UNSPEC;
  tcm->tcm_ifindex = ifindex;
  tcm->tcm_parent = parent;
  tcm->tcm_handle = handle;
  return tcm;
}

std::uint32_t clsact_parent(bool ingress) {
  return TC_H_MAKE(TC_H_CLSACT, ingress ? TC_H_MIN_INGRESS : TC_H_MIN_EGRESS);
}

std::string if_name(int ifindex) {
  char name[IF_NAMESIZE] = {};
  if (!if_indextoname(static_cast<unsigned>(ifindex), name)) return "ifindex " + std::to_string(ifindex);
  return name;
}

}  // namespace

std::string ipv4_to_string(std::uint32_t addr_host_order) {
  const std::uint32_t net = htonl(addr_host_order);
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &net, text, sizeof(text));
  return text;
}

std::string ipv6_to_string(const std::array<std::uint8_t, 16>& addr) {
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, addr.data(), text, sizeof(text));
  return text;
}

NetlinkMessage::NetlinkMessage(std::uint16_t type, std::uint16_t flags) : buffer_(MNL_SOCKET_BUFFER_SIZE) {
  nlmsghdr* nlh = mnl_nlmsg_put_header(buffer_.data());
  nlh->nlmsg_type = type;
  nlh->nlmsg_flags = flags;
}

nlmsghdr* NetlinkMessage::header() { return reinterpret_cast<nlmsghdr*>(buffer_.data()); }

NetlinkMessage veth_message(const std::string& name, const std::string& peer_name, int peer_netns_fd) {
  NetlinkMessage message(RTM_NEWLINK, kCreate);
  nlmsghdr* nlh = message.header();
  put_ifinfo(nlh);
  mnl_attr_put_strz(nlh, IFLA_IFNAME, name.c_str());
  nlattr* linkinfo = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
  mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "veth");
  nlattr* data = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
  nlattr* peer = mnl_attr_nest_start(nlh, VETH_INFO_PEER);
  // The peer's attributes follow its own ifinfomsg header inside the nest.
  nlh->nlmsg_len += MNL_ALIGN(sizeof(ifinfomsg));
  mnl_attr_put_strz(nlh, IFLA_IFNAME, peer_name.c_str());
  mnl_attr_put_u32(nlh, IFLA_NET_NS_FD, static_cast<std::uint32_t>(peer_netns_fd));
  mnl_attr_nest_end(nlh, peer);
  mnl_attr_nest_end(nlh, data);
  mnl_attr_nest_end(nlh, linkinfo);
  return message;
}

NetlinkMessage bpf_filter_message(int ifindex, bool ingress, int prog_fd, const std::string& prog_name,
                                  std::uint32_t priority, std::uint32_t handle) {
  NetlinkMessage message(RTM_NEWTFILTER, kCreate);
  nlmsghdr* nlh = message.header();
  tcmsg* tcm = put_tcmsg(nlh, ifindex, clsact_parent(ingress), handle);
  tcm->tcm_info = TC_H_MAKE(priority << 16, htons(ETH_P_ALL));
  mnl_attr_put_strz(nlh, TCA_KIND, "bpf");
  nlattr* options = mnl_attr_nest_start(nlh, TCA_OPTIONS);
  mnl_attr_put_u32(nlh, TCA_BPF_FD, static_cast<std::uint32_t>(prog_fd));
  mnl_attr_put_strz(nlh, TCA_BPF_NAME, prog_name.c_str());
  mnl_attr_put_u32(nlh, TCA_BPF_FLAGS, TCA_BPF_FLAG_ACT_DIRECT);
  mnl_attr_nest_end(nlh, options);
  return message;
}

Rtnl::Rtnl() {
  socket_ = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
  if (!socket_) base::throw_errno("opening rtnetlink socket");
  if (mnl_socket_bind(socket_, 0, MNL_SOCKET_AUTOPID) < 0) {
    const int err = errno;
    mnl_socket_close(socket_);
    base::throw_errno("binding rtnetlink socket", err);
  }
  port_id_ = mnl_socket_get_portid(socket_);
}

Rtnl::~Rtnl() { mnl_socket_close(socket_); }

void Rtnl::transact(NetlinkMessage& message, const std::string& what) { transact(message, what, nullptr, nullptr); }

void Rtnl::transact(NetlinkMessage& message, const std::string& what, int (*callback)(const nlmsghdr*, void*),
                    void* data) {
  nlmsghdr* nlh = message.header();
  nlh->nlmsg_seq = next_seq_++;
  if (mnl_socket_sendto(socket_, nlh, nlh->nlmsg_len) < 0) base::throw_errno(what);
  std::vector<char> reply(MNL_SOCKET_BUFFER_SIZE);
  for (;;) {
    const ssize_t len = mnl_socket_recvfrom(socket_, reply.data(), reply.size());
    if (len < 0) base::throw_errno(what);
    const int ret = mnl_cb_run(reply.data(), static_cast<size_t>(len), nlh->nlmsg_seq, port_id_, callback, data);
    if (ret < 0) base::throw_errno(what);
    if (ret == MNL_CB_STOP) return;
  }
}

int Rtnl::link_index(const std::string& name) const {
  const unsigned index = if_nametoindex(name.c_str());
  if (index == 0) base::throw_errno("looking up interface " + name);
  return static_cast<int>(index);
}

void Rtnl::add_veth(const std::string& name, const std::string& peer_name, int peer_netns_fd) {
  NetlinkMessage message = veth_message(name, peer_name, peer_netns_fd);
  transact(message, "creating veth " + name + " <-> " + peer_name);
}

void Rtnl::set_up(int ifindex) {
  NetlinkMessage message(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK);
  ifinfomsg* ifi = put_ifinfo(message.header());
  ifi->ifi_index = ifindex;
  ifi->ifi_flags = IFF_UP;
  ifi->ifi_change = IFF_UP;
  transact(message, if_name(ifindex) + ": setting link up");
}

void Rtnl::add_address_v4(int ifindex, std::uint32_t addr, int prefix_len) {
  NetlinkMessage message(RTM_NEWADDR, kCreate);
  nlmsghdr* nlh = message.header();
  auto* ifa = static_cast<ifaddrmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ifaddrmsg)));
  ifa->ifa_family = AF_INET;
  ifa->ifa_prefixlen = static_cast<unsigned char>(prefix_len);
  ifa->ifa_index = static_cast<unsigned>(ifindex);
  mnl_attr_put_u32(nlh, IFA_LOCAL, htonl(addr));
  mnl_attr_put_u32(nlh, IFA_ADDRESS, htonl(addr));
  transact(message, if_name(ifindex) + ": adding address " + ipv4_to_string(addr) + "/" + std::to_string(prefix_len));
}

namespace {

// A static main-table IPv4 route, as adding and removing one name it.
void put_route_v4(nlmsghdr* nlh, std::uint32_t dst, int dst_len, int oif, std::optional<std::uint32_t> gateway,
                  unsigned char scope) {
  auto* rtm = static_cast<rtmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(rtmsg)));
  rtm->rtm_family = AF_INET;
  rtm->rtm_dst_len = static_cast<unsigned char>(dst_len);
  rtm->rtm_table = RT_TABLE_MAIN;
  rtm->rtm_protocol = RTPROT_STATIC;
  rtm->rtm_type = RTN_UNICAST;
  rtm->rtm_scope = scope;
  if (gateway) rtm->rtm_flags = RTNH_F_ONLINK;
  if (dst_len > 0) mnl_attr_put_u32(nlh, RTA_DST, htonl(dst));
  mnl_attr_put_u32(nlh, RTA_OIF, static_cast<std::uint32_t>(oif));
  if (gateway) mnl_attr_put_u32(nlh, RTA_GATEWAY, htonl(*gateway));
}

}  // namespace

void Rtnl::add_route_v4(std::uint32_t dst, int dst_len, int oif, std::optional<std::uint32_t> gateway) {
  NetlinkMessage message(RTM_NEWROUTE, kCreate);
  put_route_v4(message.header(), dst, dst_len, oif, gateway, gateway ? RT_SCOPE_UNIVERSE : RT_SCOPE_LINK);
  transact(message, if_name(oif) + ": adding route " + ipv4_to_string(dst) + "/" + std::to_string(dst_len));
}

void Rtnl::delete_route_v4(std::uint32_t dst, int dst_len, int oif, std::uint32_t gateway) {
  NetlinkMessage message(RTM_DELROUTE, NLM_F_REQUEST | NLM_F_ACK);
  put_route_v4(message.header(), dst, dst_len, oif, gateway, RT_SCOPE_NOWHERE);  // any scope
  transact(message, if_name(oif) + ": removing route " + ipv4_to_string(dst) + "/" + std::to_string(dst_len));
}

void Rtnl::add_address_v6(int ifindex, const Ipv6& addr, int prefix_len) {
  NetlinkMessage message(RTM_NEWADDR, kCreate);
  nlmsghdr* nlh = message.header();
  auto* ifa = static_cast<ifaddrmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ifaddrmsg)));
  ifa->ifa_family = AF_INET6;
  ifa->ifa_prefixlen = static_cast<unsigned char>(prefix_len);
  ifa->ifa_flags = IFA_F_NODAD;
  ifa->ifa_index = static_cast<unsigned>(ifindex);
  mnl_attr_put(nlh, IFA_LOCAL, addr.size(), addr.data());
  mnl_attr_put(nlh, IFA_ADDRESS, addr.size(), addr.data());
  mnl_attr_put_u32(nlh, IFA_FLAGS, IFA_F_NODAD);
  transact(message, if_name(ifindex) + ": adding address " + ipv6_to_string(addr) + "/" + std::to_string(prefix_len));
}

void Rtnl::add_route_v6(const Ipv6& dst, int dst_len, int oif, std::optional<Ipv6> gateway) {
  NetlinkMessage message(RTM_NEWROUTE, kCreate);
  nlmsghdr* nlh = message.header();
  auto* rtm = static_cast<rtmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(rtmsg)));
  rtm->rtm_family = AF_INET6;
  rtm->rtm_dst_len = static_cast<unsigned char>(dst_len);
  rtm->rtm_table = RT_TABLE_MAIN;
  rtm->rtm_protocol = RTPROT_STATIC;
  rtm->rtm_type = RTN_UNICAST;
  rtm->rtm_scope = RT_SCOPE_UNIVERSE;
  if (gateway) rtm->rtm_flags = RTNH_F_ONLINK;
  if (dst_len > 0) mnl_attr_put(nlh, RTA_DST, dst.size(), dst.data());
  mnl_attr_put_u32(nlh, RTA_OIF, static_cast<std::uint32_t>(oif));
  if (gateway) mnl_attr_put(nlh, RTA_GATEWAY, gateway->size(), gateway->data());
  transact(message, if_name(oif) + ": adding route " + ipv6_to_string(dst) + "/" + std::to_string(dst_len));
}

void Rtnl::add_clsact(int ifindex) {
  NetlinkMessage message(RTM_NEWQDISC, kCreate);
  put_tcmsg(message.header(), ifindex, TC_H_CLSACT, TC_H_MAKE(TC_H_CLSACT, 0));
  mnl_attr_put_strz(message.header(), TCA_KIND, "clsact");
  transact(message, if_name(ifindex) + ": adding clsact qdisc");
}

void Rtnl::delete_clsact(int ifindex) {
  NetlinkMessage message(RTM_DELQDISC, NLM_F_REQUEST | NLM_F_ACK);
  put_tcmsg(message.header(), ifindex, TC_H_CLSACT, TC_H_MAKE(TC_H_CLSACT, 0));
  mnl_attr_put_strz(message.header(), TCA_KIND, "clsact");
  transact(message, if_name(ifindex) + ": deleting clsact qdisc");
}

void Rtnl::add_bpf_filter(int ifindex, bool ingress, int prog_fd, const std::string& prog_name, std::uint32_t priority,
                          std::uint32_t handle) {
  NetlinkMessage message = bpf_filter_message(ifindex, ingress, prog_fd, prog_name, priority, handle);
  transact(message, if_name(ifindex) + ": attaching " + prog_name + " at tc " + (ingress ? "ingress" : "egress"));
}

void Rtnl::delete_bpf_filters(int ifindex, bool ingress) {
  NetlinkMessage message(RTM_DELTFILTER, NLM_F_REQUEST | NLM_F_ACK);
  put_tcmsg(message.header(), ifindex, clsact_parent(ingress), 0);
  transact(message, if_name(ifindex) + ": detaching tc " + (ingress ? "ingress" : "egress") + " filters");
}

void Rtnl::delete_bpf_filter(int ifindex, bool ingress, std::uint32_t priority, std::uint32_t handle) {
  NetlinkMessage message(RTM_DELTFILTER, NLM_F_REQUEST | NLM_F_ACK);
  nlmsghdr* nlh = message.header();
  tcmsg* tcm = put_tcmsg(nlh, ifindex, clsact_parent(ingress), handle);
  tcm->tcm_info = TC_H_MAKE(priority << 16, htons(ETH_P_ALL));
  mnl_attr_put_strz(nlh, TCA_KIND, "bpf");
  transact(message, if_name(ifindex) + ": detaching our tc " + (ingress ? "ingress" : "egress") + " filter");
}

void Rtnl::add_fq_root(int ifindex, const FqOptions& options) {
  NetlinkMessage message(RTM_NEWQDISC, kCreate);
  nlmsghdr* nlh = message.header();
  put_tcmsg(nlh, ifindex, TC_H_ROOT, TC_H_MAKE(0x8001u << 16, 0));
  mnl_attr_put_strz(nlh, TCA_KIND, "fq");
  nlattr* nest = mnl_attr_nest_start(nlh, TCA_OPTIONS);
  mnl_attr_put_u32(nlh, TCA_FQ_PLIMIT, options.packet_limit);
  mnl_attr_put_u32(nlh, TCA_FQ_FLOW_PLIMIT, options.flow_packet_limit);
  mnl_attr_put_u32(nlh, TCA_FQ_HORIZON, options.horizon_us);
  mnl_attr_put_u8(nlh, TCA_FQ_HORIZON_DROP, 0);
  mnl_attr_nest_end(nlh, nest);
  transact(message, if_name(ifindex) + ": adding fq qdisc");
}

std::optional<RootQdisc> Rtnl::configured_root_qdisc(int ifindex) {
  struct Search {
    int ifindex;
    std::optional<RootQdisc> found;
  } search{ifindex, std::nullopt};
  NetlinkMessage message(RTM_GETQDISC, NLM_F_REQUEST | NLM_F_DUMP);
  put_tcmsg(message.header(), ifindex, 0, 0);
  // The dump lists every interface's qdiscs: keep the one at this one's root.
  auto on_qdisc = [](const nlmsghdr* nlh, void* data) -> int {
    auto* search = static_cast<Search*>(data);
    if (nlh->nlmsg_type != RTM_NEWQDISC || nlh->nlmsg_len < mnl_nlmsg_size(sizeof(tcmsg))) return MNL_CB_OK;
    const auto* tcm = static_cast<const tcmsg*>(mnl_nlmsg_get_payload(nlh));
    // Handle 0 is the kernel's default qdisc (noqueue, pfifo_fast, mq): nobody's configuration.
    if (tcm->tcm_ifindex != search->ifindex || tcm->tcm_parent != TC_H_ROOT || tcm->tcm_handle == 0) return MNL_CB_OK;
    RootQdisc root{"", tcm->tcm_handle};
    const char* tail = static_cast<const char*>(mnl_nlmsg_get_payload_tail(nlh));
    for (auto* attr = static_cast<const nlattr*>(mnl_nlmsg_get_payload_offset(nlh, sizeof(tcmsg)));
         mnl_attr_ok(attr, static_cast<int>(tail - reinterpret_cast<const char*>(attr))); attr = mnl_attr_next(attr)) {
      if (mnl_attr_get_type(attr) == TCA_KIND && mnl_attr_validate(attr, MNL_TYPE_NUL_STRING) >= 0)
        root.kind = mnl_attr_get_str(attr);
    }
    search->found = root;
    return MNL_CB_OK;
  };
  transact(message, if_name(ifindex) + ": listing qdiscs", on_qdisc, &search);
  return search.found;
}

void Rtnl::delete_root_qdisc(int ifindex) {
  NetlinkMessage message(RTM_DELQDISC, NLM_F_REQUEST | NLM_F_ACK);
  put_tcmsg(message.header(), ifindex, TC_H_ROOT, 0);
  transact(message, if_name(ifindex) + ": deleting root qdisc");
}

}  // namespace wanlab::emulator
