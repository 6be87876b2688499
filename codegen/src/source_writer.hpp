#pragma once
// A small indented source writer: the one place where generated text is laid out, so
// every kernel reads as if written by hand.
#include <sstream>
#include <string>
#include <string_view>

namespace fuseflow::codegen {

class SourceWriter {
 public:
  void line(std::string_view text = {}) {
    if (!text.empty()) out_ << std::string(static_cast<std::size_t>(indent_) * 2, ' ') << text;
    out_ << '\n';
  }
  // "header {" and indent.
  void open(std::string_view header) {
    line(std::string(header) + " {");
    ++indent_;
  }
  void close(std::string_view tail = "}") {
    --indent_;
    line(tail);
  }
  void indent() { ++indent_; }
  void dedent() { --indent_; }
  // Every line of `text` as a // comment.
  void comment(std::string_view text) {
    std::istringstream in{std::string(text)};
    for (std::string l; std::getline(in, l);) line(l.empty() ? "//" : "// " + l);
  }
  std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
  int indent_ = 0;
};

}  // namespace fuseflow::codegen
