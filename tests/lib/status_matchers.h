// gMock matchers and assertions for absl::Status and absl::StatusOr<T>. Debian 12's abseil
// (20220623) has no absl/status/status_matchers.h (it came with a later LTS), so these follow its
// interface and names:
//
//   EXPECT_THAT(s, IsOk());
//   EXPECT_THAT(s, StatusIs(absl::StatusCode::kNotFound));
//   EXPECT_THAT(s, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("[1].dst")));
//   EXPECT_THAT(s, Not(IsOk()));
//   ASSERT_OK(s) << "context";  /  EXPECT_OK(s);
//   ASSERT_OK_AND_ASSIGN(Snapshot snap, Snapshot::Open(dir));  // fatal when not OK
//
// `s` is an absl::Status or an absl::StatusOr<T> (for which the status is matched). A failure
// prints the status's code and message (for a StatusOr too: see PrintTo below).
#ifndef SARENA_TESTS_LIB_STATUS_MATCHERS_H_
#define SARENA_TESTS_LIB_STATUS_MATCHERS_H_

#include <ostream>
#include <string>
#include <utility>

#include "absl/base/config.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sarena::testing {
namespace internal_status {

inline const absl::Status& GetStatus(const absl::Status& status) { return status; }
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

/// "OK", or "INVALID_ARGUMENT: parse x.json: [1].dst: ..." (code and message, no payloads).
inline std::string Describe(const absl::Status& status) {
  if (status.ok()) return "OK";
  return absl::StrCat(absl::StatusCodeToString(status.code()), ": ", status.message());
}

template <typename StatusType>
class MonoIsOkMatcher : public ::testing::MatcherInterface<StatusType> {
 public:
  void DescribeTo(std::ostream* os) const override { *os << "is OK"; }
  void DescribeNegationTo(std::ostream* os) const override { *os << "is not OK"; }
  bool MatchAndExplain(StatusType actual, ::testing::MatchResultListener*) const override {
    return GetStatus(actual).ok();  // the value printed (code and message) says why not
  }
};

class IsOkMatcher {
 public:
  template <typename StatusType>
  operator ::testing::Matcher<StatusType>() const {  // NOLINT: implicit, like gMock's own
    return ::testing::Matcher<StatusType>(new MonoIsOkMatcher<StatusType>());
  }
};

template <typename StatusType>
class MonoStatusIsMatcher : public ::testing::MatcherInterface<StatusType> {
 public:
  MonoStatusIsMatcher(::testing::Matcher<absl::StatusCode> code,
                      ::testing::Matcher<const std::string&> message)
      : code_(std::move(code)), message_(std::move(message)) {}

  void DescribeTo(std::ostream* os) const override {
    *os << "has a status code that ";
    code_.DescribeTo(os);
    *os << ", and a message that ";
    message_.DescribeTo(os);
  }
  void DescribeNegationTo(std::ostream* os) const override {
    *os << "has a status code that ";
    code_.DescribeNegationTo(os);
    *os << ", or a message that ";
    message_.DescribeNegationTo(os);
  }
  bool MatchAndExplain(StatusType actual, ::testing::MatchResultListener* listener) const override {
    const absl::Status& status = GetStatus(actual);
    ::testing::StringMatchResultListener why;
    if (!code_.MatchAndExplain(status.code(), &why)) {
      *listener << "whose status code is " << absl::StatusCodeToString(status.code());
      if (!why.str().empty()) *listener << ", " << why.str();
      return false;
    }
    const std::string message(status.message());
    if (!message_.MatchAndExplain(message, &why)) {
      *listener << "whose message " << ::testing::PrintToString(message) << " does not match";
      if (!why.str().empty()) *listener << ", " << why.str();
      return false;
    }
    return true;
  }

 private:
  ::testing::Matcher<absl::StatusCode> code_;
  ::testing::Matcher<const std::string&> message_;
};

class StatusIsMatcher {
 public:
  StatusIsMatcher(::testing::Matcher<absl::StatusCode> code,
                  ::testing::Matcher<const std::string&> message)
      : code_(std::move(code)), message_(std::move(message)) {}

  template <typename StatusType>
  operator ::testing::Matcher<StatusType>() const {  // NOLINT: implicit, like gMock's own
    return ::testing::Matcher<StatusType>(new MonoStatusIsMatcher<StatusType>(code_, message_));
  }

 private:
  ::testing::Matcher<absl::StatusCode> code_;
  ::testing::Matcher<const std::string&> message_;
};

/// For ASSERT_OK / EXPECT_OK: "`expr` is not OK: NOT_FOUND: ...".
template <typename StatusType>
::testing::AssertionResult AssertOk(const char* expr, const StatusType& actual) {
  const absl::Status& status = GetStatus(actual);
  if (status.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << expr << " is not OK: " << Describe(status);
}

}  // namespace internal_status

/// Matches an OK absl::Status, or an absl::StatusOr<T> holding a value.
inline internal_status::IsOkMatcher IsOk() { return {}; }

/// Matches a status (of an absl::Status or absl::StatusOr<T>) whose code matches `code` (a code,
/// or a matcher of one) and whose message matches `message` (a string for equality, or a
/// matcher of std::string such as HasSubstr).
template <typename CodeMatcher, typename MessageMatcher>
internal_status::StatusIsMatcher StatusIs(CodeMatcher&& code, MessageMatcher&& message) {
  return internal_status::StatusIsMatcher(
      ::testing::MatcherCast<absl::StatusCode>(std::forward<CodeMatcher>(code)),
      ::testing::MatcherCast<const std::string&>(std::forward<MessageMatcher>(message)));
}
/// Any message.
template <typename CodeMatcher>
internal_status::StatusIsMatcher StatusIs(CodeMatcher&& code) {
  return StatusIs(std::forward<CodeMatcher>(code), ::testing::_);
}

}  // namespace sarena::testing

// gtest prints a value with PrintTo or operator<<; this abseil has neither for StatusOr (later
// ones have operator<<), so a failing EXPECT_THAT on one printed its bytes. Found by ADL.
#if defined(ABSL_LTS_RELEASE_VERSION) && ABSL_LTS_RELEASE_VERSION < 20230802
namespace absl {
ABSL_NAMESPACE_BEGIN
template <typename T>
void PrintTo(const StatusOr<T>& status_or, std::ostream* os) {
  if (status_or.ok()) {
    *os << ::testing::PrintToString(*status_or);
  } else {
    *os << ::sarena::testing::internal_status::Describe(status_or.status());
  }
}
ABSL_NAMESPACE_END
}  // namespace absl
#endif

/// Fatal / non-fatal: `expr` (an absl::Status or absl::StatusOr<T>) is OK; otherwise the failure
/// names the expression and prints the status. Takes `<< more context` like any assertion.
#define ASSERT_OK(expr) \
  ASSERT_PRED_FORMAT1(::sarena::testing::internal_status::AssertOk, expr)
#define EXPECT_OK(expr) \
  EXPECT_PRED_FORMAT1(::sarena::testing::internal_status::AssertOk, expr)

/// `rexpr` is an absl::StatusOr<T>: asserts it is OK (fatal) and moves its value into `lhs`
/// (a declaration such as `auto x` or `const Foo& f`, or an existing variable).
#define ASSERT_OK_AND_ASSIGN(lhs, rexpr)                                                       \
  SARENA_TESTING_ASSERT_OK_AND_ASSIGN_IMPL_(                                                   \
      SARENA_TESTING_STATUS_CONCAT_(sarena_testing_statusor_, __LINE__), lhs, rexpr)
#define SARENA_TESTING_ASSERT_OK_AND_ASSIGN_IMPL_(statusor, lhs, rexpr)                   \
  auto statusor = (rexpr);                                                                \
  GTEST_ASSERT_(::sarena::testing::internal_status::AssertOk(#rexpr, statusor),           \
                GTEST_FATAL_FAILURE_);                                                    \
  lhs = std::move(statusor).value()
#define SARENA_TESTING_STATUS_CONCAT_INNER_(a, b) a##b
#define SARENA_TESTING_STATUS_CONCAT_(a, b) SARENA_TESTING_STATUS_CONCAT_INNER_(a, b)

#endif  // SARENA_TESTS_LIB_STATUS_MATCHERS_H_
