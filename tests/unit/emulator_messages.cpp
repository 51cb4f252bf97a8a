// Netlink messages built by the control plane, checked attribute by attribute
// without a kernel.
// Boost.Test first: linux/pkt_cls.h defines a tc_gen macro that breaks it.
#include <boost/test/unit_test.hpp>

#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <linux/pkt_cls.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>

#include <map>
#include <string>

#include "wanlab/emulator/rtnl.hpp"

extern "C" {
#include "wanlab_shared.h"
}

namespace em = wanlab::emulator;

namespace {

// Attributes of one nesting level, by type.
std::map<int, const nlattr*> attributes(const void* start, std::size_t length) {
  std::map<int, const nlattr*> found;
  auto* attr = static_cast<const nlattr*>(start);
  int left = static_cast<int>(length);
  while (mnl_attr_ok(attr, left)) {
    found[mnl_attr_get_type(attr)] = attr;
    left -= static_cast<int>(MNL_ALIGN(attr->nla_len));
    attr = mnl_attr_next(attr);
  }
  return found;
}

std::map<int, const nlattr*> top_level(em::NetlinkMessage& message, std::size_t header_size) {
  nlmsghdr* nlh = message.header();
  const auto* payload = static_cast<const char*>(mnl_nlmsg_get_payload_offset(nlh, header_size));
  const auto* end = static_cast<const char*>(mnl_nlmsg_get_payload_tail(nlh));
  return attributes(payload, static_cast<std::size_t>(end - payload));
}

std::map<int, const nlattr*> nested(const nlattr* attr, std::size_t skip = 0) {
  const auto* payload = static_cast<const char*>(mnl_attr_get_payload(attr)) + skip;
  return attributes(payload, mnl_attr_get_payload_len(attr) - skip);
}

std::string text(const nlattr* attr) { return mnl_attr_get_str(attr); }

}  // namespace

BOOST_AUTO_TEST_CASE(veth_message_creates_the_peer_in_the_given_namespace) {
  em::NetlinkMessage message = em::veth_message("wanlabh3", "wanlab0", 42);
  nlmsghdr* nlh = message.header();
  BOOST_TEST(nlh->nlmsg_type == RTM_NEWLINK);
  BOOST_TEST((nlh->nlmsg_flags & (NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK)) == (NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK));
  auto attrs = top_level(message, sizeof(ifinfomsg));
  BOOST_TEST_REQUIRE(attrs.count(IFLA_IFNAME));
  BOOST_TEST(text(attrs[IFLA_IFNAME]) == "wanlabh3");
  auto linkinfo = nested(attrs.at(IFLA_LINKINFO));
  BOOST_TEST(text(linkinfo.at(IFLA_INFO_KIND)) == "veth");
  auto data = nested(linkinfo.at(IFLA_INFO_DATA));
  // The peer nest starts with the peer's own ifinfomsg.
  auto peer = nested(data.at(VETH_INFO_PEER), MNL_ALIGN(sizeof(ifinfomsg)));
  BOOST_TEST(text(peer.at(IFLA_IFNAME)) == "wanlab0");
  BOOST_TEST(mnl_attr_get_u32(peer.at(IFLA_NET_NS_FD)) == 42u);
}

BOOST_AUTO_TEST_CASE(bpf_filter_message_is_direct_action_at_the_chosen_hook) {
  for (bool ingress : {true, false}) {
    em::NetlinkMessage message = em::bpf_filter_message(7, ingress, 13, "wanlab_tc", 0xc0de, 0x5741);
    nlmsghdr* nlh = message.header();
    BOOST_TEST(nlh->nlmsg_type == RTM_NEWTFILTER);
    const auto* tcm = static_cast<const tcmsg*>(mnl_nlmsg_get_payload(nlh));
    BOOST_TEST(tcm->tcm_ifindex == 7);
    BOOST_TEST(tcm->tcm_parent == TC_H_MAKE(TC_H_CLSACT, ingress ? TC_H_MIN_INGRESS : TC_H_MIN_EGRESS));
    BOOST_TEST(tcm->tcm_handle == 0x5741u);
    BOOST_TEST(TC_H_MAJ(tcm->tcm_info) >> 16 == 0xc0deu);
    BOOST_TEST(TC_H_MIN(tcm->tcm_info) == htons(ETH_P_ALL));
    auto attrs = top_level(message, sizeof(tcmsg));
    BOOST_TEST(text(attrs.at(TCA_KIND)) == "bpf");
    auto options = nested(attrs.at(TCA_OPTIONS));
    BOOST_TEST(mnl_attr_get_u32(options.at(TCA_BPF_FD)) == 13u);
    BOOST_TEST(text(options.at(TCA_BPF_NAME)) == "wanlab_tc");
    BOOST_TEST(mnl_attr_get_u32(options.at(TCA_BPF_FLAGS)) == static_cast<std::uint32_t>(TCA_BPF_FLAG_ACT_DIRECT));
  }
}
