// One function per `wanlab` subcommand; each gets the arguments after its name
// and returns the process exit code.
#pragma once

#include <span>
#include <string>

namespace wanlab::cli {

using Args = std::span<const std::string>;

int cmd_up(Args args);
int cmd_down(Args args);
int cmd_run(Args args);
int cmd_verify(Args args);
int cmd_hosts(Args args);
int cmd_exec(Args args);
int cmd_set(Args args);
int cmd_stats(Args args);
int cmd_status(Args args);
int cmd_attach(Args args);
int cmd_daemon(Args args);  // internal: releaser and timed events of one testbed
int cmd_perf(Args args);
int cmd_demo(Args args);
int cmd_train(Args args);
int cmd_compare(Args args);
int cmd_worker(Args args);  // internal: one emulated GPU of `train`
int cmd_prefill_worker(Args args);  // internal: BubbleTea prefill on one emulated GPU of `train`
int cmd_decode_sink(Args args);  // internal: BubbleTea decode host of `train`

}  // namespace wanlab::cli
