// TCX and tc attachment of the real programs to a veth in a network namespace created by the
// test: attach, query, pin, reopen from the pin, atomic update, detach; the forced tc fallback.
#include <linux/bpf.h>
#include <net/if.h>
#include <unistd.h>

#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "libsarena/bpf/link.h"
#include "libsarena/datapath/objects.h"
#include "tests/bpf/bpf_test_env.h"
#include "tests/lib/test_util.h"

namespace sarena::bpf {
namespace {

using ::sarena::datapath::Program;
using ::sarena::datapath::Objects;

using ::testing::HasSubstr;

class LinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(::sarena::testing::IsRoot()) << "bpf tier needs root";
    ns_.emplace("sbl");
    ::sarena::testing::RunOk(ns_->Exec("ip link add veth0 type veth peer name veth1"));
    ::sarena::testing::RunOk(ns_->Exec("ip link set veth0 up"));
    ::sarena::testing::RunOk(ns_->Exec("ip link set veth1 up"));
    enter_.emplace(ns_->path());
    ifindex_ = static_cast<int>(if_nametoindex("veth0"));
    ASSERT_GT(ifindex_, 0);
    auto objs = Objects::Load({.pin_root = bpffs_.path()});
    ASSERT_TRUE(objs.ok()) << objs.status();
    objs_.emplace(std::move(*objs));
  }
  void TearDown() override {
    objs_.reset();
    enter_.reset();  // back to the original netns before the test netns is deleted
    ns_.reset();
  }

  int fd(Program p) { return objs_->prog_fd(p); }
  uint32_t id(Program p) { return *objs_->prog_id(p); }

  std::vector<AttachedProgram> Query(Direction d) {
    auto q = QueryAttached(ifindex_, d);
    EXPECT_TRUE(q.ok()) << q.status();
    return q.ok() ? *q : std::vector<AttachedProgram>{};
  }

  ::sarena::testing::ScopedBpffs bpffs_;
  std::optional<::sarena::testing::ScopedNetns> ns_;
  std::optional<::sarena::testing::ScopedNetnsEnter> enter_;
  std::optional<Objects> objs_;
  int ifindex_ = 0;
};

TEST_F(LinkTest, KernelHasTcxAndAutoPicksIt) {
  EXPECT_TRUE(KernelHasTcx()) << "this machine runs Linux >= 6.6";
  auto link = Link::Attach(fd(Program::kFromContainer), ifindex_, Direction::kIngress);
  ASSERT_TRUE(link.ok()) << link.status();
  EXPECT_EQ(link->mode(), AttachMode::kTcx);
}

TEST_F(LinkTest, TcxAttachQueryDetach) {
  EXPECT_TRUE(Query(Direction::kIngress).empty());
  auto link = Link::AttachTcx(fd(Program::kFromContainer), ifindex_, Direction::kIngress);
  ASSERT_TRUE(link.ok()) << link.status();
  EXPECT_EQ(link->mode(), AttachMode::kTcx);
  EXPECT_GE(link->fd(), 0);
  EXPECT_NE(link->link_id(), 0u);
  EXPECT_EQ(link->prog_id(), id(Program::kFromContainer));
  EXPECT_EQ(link->ifindex(), ifindex_);

  auto in = Query(Direction::kIngress);
  ASSERT_EQ(in.size(), 1u);
  EXPECT_EQ(in[0].mode, AttachMode::kTcx);
  EXPECT_EQ(in[0].prog_id, id(Program::kFromContainer));
  EXPECT_EQ(in[0].link_id, link->link_id());
  EXPECT_EQ(in[0].name, "from_container");
  EXPECT_TRUE(Query(Direction::kEgress).empty());

  ASSERT_TRUE(link->Detach().ok());
  EXPECT_TRUE(Query(Direction::kIngress).empty());
  EXPECT_TRUE(link->Detach().ok()) << "idempotent";
  EXPECT_TRUE(Query(Direction::kIngress).empty());
}

TEST_F(LinkTest, ClosingAnUnpinnedLinkDetaches) {
  {
    auto link = Link::AttachTcx(fd(Program::kFromHost), ifindex_, Direction::kEgress);
    ASSERT_TRUE(link.ok()) << link.status();
    EXPECT_EQ(Query(Direction::kEgress).size(), 1u);
  }
  EXPECT_TRUE(Query(Direction::kEgress).empty());
}

TEST_F(LinkTest, PinnedLinkOutlivesItsFdAndIsUpdatedInPlace) {
  std::string pin = bpffs_.path() + "/link_veth0_ingress";
  uint32_t link_id;
  {
    auto link = Link::AttachTcx(fd(Program::kFromContainer), ifindex_, Direction::kIngress);
    ASSERT_TRUE(link.ok()) << link.status();
    ASSERT_TRUE(link->Pin(pin).ok());
    EXPECT_EQ(link->Pin(pin).code(), absl::StatusCode::kAlreadyExists);
    link_id = link->link_id();
  }
  // The daemon restarted: the program is still attached, through the pin.
  auto in = Query(Direction::kIngress);
  ASSERT_EQ(in.size(), 1u);
  EXPECT_EQ(in[0].prog_id, id(Program::kFromContainer));

  auto link = Link::FromPin(pin);
  ASSERT_TRUE(link.ok()) << link.status();
  EXPECT_EQ(link->mode(), AttachMode::kTcx);
  EXPECT_EQ(link->ifindex(), ifindex_);
  EXPECT_EQ(link->direction(), Direction::kIngress);
  EXPECT_EQ(link->link_id(), link_id);
  EXPECT_EQ(link->prog_id(), id(Program::kFromContainer));

  // Upgrade: swap the program atomically, same link.
  ASSERT_TRUE(link->Update(fd(Program::kNoop)).ok());
  EXPECT_EQ(link->prog_id(), id(Program::kNoop));
  in = Query(Direction::kIngress);
  ASSERT_EQ(in.size(), 1u);
  EXPECT_EQ(in[0].prog_id, id(Program::kNoop));
  EXPECT_EQ(in[0].name, "noop");
  EXPECT_EQ(in[0].link_id, link_id);

  ASSERT_TRUE(link->Detach().ok());
  EXPECT_TRUE(Query(Direction::kIngress).empty());
  unlink(pin.c_str());
}

TEST_F(LinkTest, FromPinRejectsNonLinksAndMissingPins) {
  EXPECT_EQ(Link::FromPin(bpffs_.path() + "/none").status().code(), absl::StatusCode::kNotFound);
  auto not_link = Link::FromPin(bpffs_.path() + "/" SARENA_MAP_ENDPOINTS);
  EXPECT_EQ(not_link.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(LinkTest, SeveralTcxProgramsAreListedInOrder) {
  auto a = Link::AttachTcx(fd(Program::kFromHost), ifindex_, Direction::kEgress);
  auto b = Link::AttachTcx(fd(Program::kNoop), ifindex_, Direction::kEgress);
  ASSERT_TRUE(a.ok() && b.ok());
  auto eg = Query(Direction::kEgress);
  ASSERT_EQ(eg.size(), 2u);
  EXPECT_EQ(eg[0].name, "from_host");
  EXPECT_EQ(eg[1].name, "noop");
}

TEST_F(LinkTest, ForcedTcFallback) {
  AttachOptions tc_only;
  tc_only.mode = AttachMode::kTc;
  auto link = Link::Attach(fd(Program::kFromHost), ifindex_, Direction::kEgress, tc_only);
  ASSERT_TRUE(link.ok()) << link.status();
  EXPECT_EQ(link->mode(), AttachMode::kTc);
  EXPECT_EQ(link->fd(), -1);
  EXPECT_EQ(link->prog_id(), id(Program::kFromHost));
  EXPECT_THAT(::sarena::testing::RunOk("tc qdisc show dev veth0"), HasSubstr("clsact"));
  EXPECT_THAT(::sarena::testing::RunOk("tc filter show dev veth0 egress"),
              HasSubstr("direct-action"));

  auto eg = Query(Direction::kEgress);
  ASSERT_EQ(eg.size(), 1u);
  EXPECT_EQ(eg[0].mode, AttachMode::kTc);
  EXPECT_EQ(eg[0].prog_id, id(Program::kFromHost));
  EXPECT_EQ(eg[0].name, "from_host");
  EXPECT_EQ(eg[0].link_id, 0u);
  EXPECT_TRUE(Query(Direction::kIngress).empty());

  EXPECT_EQ(link->Pin(bpffs_.path() + "/tc").code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(link->Update(fd(Program::kNoop)).ok());
  EXPECT_EQ(link->prog_id(), id(Program::kNoop));
  eg = Query(Direction::kEgress);
  ASSERT_EQ(eg.size(), 1u);
  EXPECT_EQ(eg[0].name, "noop");

  ASSERT_TRUE(link->Detach().ok());
  EXPECT_TRUE(Query(Direction::kEgress).empty());
  EXPECT_TRUE(link->Detach().ok()) << "idempotent";
}

TEST_F(LinkTest, TcFilterOutlivesTheLinkObjectAndAttachingAgainReplacesIt) {
  {
    auto link = Link::AttachTc(fd(Program::kFromContainer), ifindex_, Direction::kIngress);
    ASSERT_TRUE(link.ok()) << link.status();
  }
  auto in = Query(Direction::kIngress);
  ASSERT_EQ(in.size(), 1u);
  EXPECT_EQ(in[0].name, "from_container");
  // A restarted daemon attaches again: replaced in place, not duplicated.
  auto again = Link::AttachTc(fd(Program::kNoop), ifindex_, Direction::kIngress);
  ASSERT_TRUE(again.ok()) << again.status();
  in = Query(Direction::kIngress);
  ASSERT_EQ(in.size(), 1u);
  EXPECT_EQ(in[0].name, "noop");
  ASSERT_TRUE(again->Detach().ok());
}

TEST_F(LinkTest, TcxAndTcSideBySideAreBothReported) {
  auto tcx = Link::AttachTcx(fd(Program::kFromContainer), ifindex_, Direction::kIngress);
  auto tc = Link::AttachTc(fd(Program::kNoop), ifindex_, Direction::kIngress);
  ASSERT_TRUE(tcx.ok() && tc.ok());
  auto in = Query(Direction::kIngress);
  ASSERT_EQ(in.size(), 2u);
  EXPECT_EQ(in[0].mode, AttachMode::kTcx);
  EXPECT_EQ(in[0].name, "from_container");
  EXPECT_EQ(in[1].mode, AttachMode::kTc);
  EXPECT_EQ(in[1].name, "noop");
  ASSERT_TRUE(tc->Detach().ok());
}

TEST_F(LinkTest, MissingDeviceIsNotFound) {
  const int missing = 0x7ffff0;
  for (AttachMode mode : {AttachMode::kAuto, AttachMode::kTcx, AttachMode::kTc}) {
    AttachOptions options;
    options.mode = mode;
    auto link = Link::Attach(fd(Program::kNoop), missing, Direction::kIngress, options);
    EXPECT_EQ(link.status().code(), absl::StatusCode::kNotFound)
        << ToString(mode) << ": " << link.status();
    EXPECT_THAT(std::string(link.status().message()), HasSubstr(absl::StrCat(missing)));
  }
  EXPECT_EQ(QueryAttached(missing, Direction::kIngress).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(LinkTest, ProgramInfoNamesThePrograms) {
  for (Program p : {Program::kFromContainer, Program::kFromHost, Program::kNoop, Program::kFromOverlay,
                    Program::kToOverlay, Program::kFromNetdev}) {
    auto info = GetProgramInfo(fd(p));
    ASSERT_TRUE(info.ok()) << info.status();
    EXPECT_EQ(info->name, ToString(p));
    EXPECT_EQ(info->type, uint32_t{BPF_PROG_TYPE_SCHED_CLS});
  }
}

}  // namespace
}  // namespace sarena::bpf
