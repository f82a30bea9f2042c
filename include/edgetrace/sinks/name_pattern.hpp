// SPDX-License-Identifier: MIT
// A name filter (--filter, --wait): a regular expression compiled once, searched in span and mark names.
#pragma once

#include <memory>
#include <string>

#include <edgetrace/config.hpp>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

/// A regular expression (ECMAScript, searched: it matches anywhere in the
/// name unless anchored), compiled once. Empty (the default) means "no
/// filter": operator bool is false and every name matches. Copies share
/// the compiled expression. <regex> is seen only where the bodies are
/// compiled (edgetrace::reader, or the header-only reader).
class name_pattern {
 public:
  name_pattern() = default;
  /// Compiles `text`; false with `error` ("bad regex '(': ...", one line)
  /// when it is not a regular expression, leaving `*this` as it was. (In a
  /// build without exceptions std::regex can only abort on a bad one.)
  EDGETRACE_DETAIL_READER_API bool compile(const std::string& text, bool ignore_case = false,
                                           std::string* error = nullptr);
  /// Does the expression occur in `name`? (An empty pattern matches every
  /// name.)
  EDGETRACE_DETAIL_READER_API bool matches(const std::string& name) const;
  explicit operator bool() const noexcept { return compiled_ != nullptr; }
  /// The text it was compiled from ("" when empty).
  const std::string& text() const noexcept { return text_; }
  bool ignores_case() const noexcept { return ignore_case_; }

 private:
  struct compiled;
  std::shared_ptr<const compiled> compiled_;
  std::string text_;
  bool ignore_case_ = false;
};

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace

#if EDGETRACE_DETAIL_READER_BODIES
#include <regex>

namespace edgetrace {
inline namespace EDGETRACE_ABI_NAMESPACE {
namespace reader {

struct name_pattern::compiled {
  std::regex expression;
};

EDGETRACE_DETAIL_READER_API bool name_pattern::compile(const std::string& text, bool ignore_case,
                                                       std::string* error) {
  auto flags = std::regex::ECMAScript | std::regex::optimize;
  if (ignore_case) flags |= std::regex::icase;
#if defined(__cpp_exceptions)
  try {
    compiled_ = std::make_shared<const compiled>(compiled{std::regex(text, flags)});
  } catch (const std::regex_error& e) {
    if (error) *error = "bad regex '" + text + "': " + e.what();
    return false;
  }
#else
  // std::regex reports a bad pattern only by throwing: built without
  // exceptions, one ends the program (the CLI is built with them).
  (void)error;
  compiled_ = std::make_shared<const compiled>(compiled{std::regex(text, flags)});
#endif
  text_ = text;
  ignore_case_ = ignore_case;
  return true;
}

EDGETRACE_DETAIL_READER_API bool name_pattern::matches(const std::string& name) const {
  return compiled_ == nullptr || std::regex_search(name, compiled_->expression);
}

}  // namespace reader
}  // namespace EDGETRACE_ABI_NAMESPACE
}  // namespace edgetrace
#endif  // EDGETRACE_DETAIL_READER_BODIES
