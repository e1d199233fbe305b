#include "orchestrator/workflow/condition.h"

#include <cctype>
#include <cstdlib>

namespace diagnose {

struct Condition::Node {
  enum class Op { Literal, Reference, Not, And, Or, Eq, Ne, Lt, Le, Gt, Ge };
  Op op = Op::Literal;
  nlohmann::json literal;
  std::string reference;
  std::shared_ptr<const Node> left, right;
};

namespace {

using Node = Condition::Node;
using NodePtr = std::shared_ptr<const Node>;

struct Token {
  enum class Kind { End, Name, Number, String, Operator, Open, Close };
  Kind kind = Kind::End;
  std::string text;
  size_t offset = 0;
};

std::vector<Token> tokenize(const std::string& text) {
  std::vector<Token> tokens;
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    Token t;
    t.offset = i;
    if (c == '(' || c == ')') {
      t.kind = c == '(' ? Token::Kind::Open : Token::Kind::Close;
      t.text = std::string(1, c);
      ++i;
    } else if (c == '\'' || c == '"') {
      size_t close = text.find(c, i + 1);
      if (close == std::string::npos) throw ConditionError("unterminated string", i);
      t.kind = Token::Kind::String;
      t.text = text.substr(i + 1, close - i - 1);
      i = close + 1;
    } else if (std::isdigit(static_cast<unsigned char>(c)) || ((c == '-' || c == '.') && i + 1 < text.size() &&
                                                               std::isdigit(static_cast<unsigned char>(text[i + 1])))) {
      char* end = nullptr;
      std::strtod(text.c_str() + i, &end);
      size_t length = static_cast<size_t>(end - (text.c_str() + i));
      t.kind = Token::Kind::Number;
      t.text = text.substr(i, length);
      i += length;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t start = i;
      while (i < text.size() &&
             (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_' || text[i] == '-' || text[i] == '.'))
        ++i;
      t.kind = Token::Kind::Name;
      t.text = text.substr(start, i - start);
    } else {
      static const char* operators[] = {"==", "!=", "<=", ">=", "&&", "||", "<", ">", "!"};
      for (const char* op : operators) {
        if (text.compare(i, std::char_traits<char>::length(op), op) == 0) {
          t.kind = Token::Kind::Operator;
          t.text = op;
          break;
        }
      }
      if (t.kind != Token::Kind::Operator) {
        if (c == '=') throw ConditionError("'=' is not an operator; use '=='", i);
        if (c == '&' || c == '|') throw ConditionError(std::string("use '") + c + c + "'", i);
        throw ConditionError(std::string("unexpected character '") + c + "'", i);
      }
      i += t.text.size();
    }
    tokens.push_back(t);
  }
  Token end;
  end.offset = text.size();
  tokens.push_back(end);
  return tokens;
}

class Parser {
 public:
  Parser(std::vector<Token> tokens, std::vector<ConditionReference>& references)
      : tokens_(std::move(tokens)), references_(references) {}

  NodePtr parse_all() {
    if (peek().kind == Token::Kind::End) throw ConditionError("empty condition", 0);
    NodePtr root = parse_or();
    if (peek().kind != Token::Kind::End)
      throw ConditionError("unexpected '" + peek().text + "' after a complete condition", peek().offset);
    return root;
  }

 private:
  const Token& peek() const { return tokens_[position_]; }
  Token take() { return tokens_[position_++]; }
  bool take_if(const char* op, const char* word) {
    const Token& t = peek();
    if ((t.kind == Token::Kind::Operator && t.text == op) || (t.kind == Token::Kind::Name && t.text == word)) {
      ++position_;
      return true;
    }
    return false;
  }

  static NodePtr binary(Node::Op op, NodePtr left, NodePtr right) {
    auto n = std::make_shared<Node>();
    n->op = op;
    n->left = std::move(left);
    n->right = std::move(right);
    return n;
  }

  NodePtr parse_or() {
    NodePtr left = parse_and();
    while (take_if("||", "or")) left = binary(Node::Op::Or, left, parse_and());
    return left;
  }

  NodePtr parse_and() {
    NodePtr left = parse_not();
    while (take_if("&&", "and")) left = binary(Node::Op::And, left, parse_not());
    return left;
  }

  NodePtr parse_not() {
    if (take_if("!", "not")) return binary(Node::Op::Not, parse_not(), nullptr);
    return parse_comparison();
  }

  NodePtr parse_comparison() {
    NodePtr left = parse_primary();
    const Token& t = peek();
    if (t.kind != Token::Kind::Operator) return left;
    static const std::pair<const char*, Node::Op> comparisons[] = {{"==", Node::Op::Eq}, {"!=", Node::Op::Ne},
                                                                   {"<", Node::Op::Lt},  {"<=", Node::Op::Le},
                                                                   {">", Node::Op::Gt},  {">=", Node::Op::Ge}};
    for (const auto& [text, op] : comparisons) {
      if (t.text == text) {
        take();
        return binary(op, left, parse_primary());
      }
    }
    return left;
  }

  NodePtr parse_primary() {
    Token t = take();
    auto n = std::make_shared<Node>();
    switch (t.kind) {
      case Token::Kind::Open: {
        NodePtr inner = parse_or();
        if (peek().kind != Token::Kind::Close) throw ConditionError("missing ')'", peek().offset);
        take();
        return inner;
      }
      case Token::Kind::Number: n->literal = std::strtod(t.text.c_str(), nullptr); return n;
      case Token::Kind::String: n->literal = t.text; return n;
      case Token::Kind::Name:
        if (t.text == "true" || t.text == "false") {
          n->literal = t.text == "true";
        } else if (t.text == "null") {
          n->literal = nullptr;
        } else if (t.text == "pass" || t.text == "fail" || t.text == "error" || t.text == "skipped") {
          n->literal = t.text;
        } else if (t.text.rfind("steps.", 0) == 0) {
          n->op = Node::Op::Reference;
          n->reference = t.text;
          references_.push_back({t.text, t.offset});
        } else {
          throw ConditionError(
              "unknown name '" + t.text + "': refer to results as steps.<id>.<field>, quote other strings", t.offset);
        }
        return n;
      case Token::Kind::End: throw ConditionError("condition ends where a value was expected", t.offset);
      default: throw ConditionError("unexpected '" + t.text + "' where a value was expected", t.offset);
    }
  }

  std::vector<Token> tokens_;
  size_t position_ = 0;
  std::vector<ConditionReference>& references_;
};

bool truthy(const nlohmann::json& v) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number()) return v.get<double>() != 0;
  if (v.is_string()) return !v.get<std::string>().empty();
  if (v.is_array() || v.is_object()) return !v.empty();
  return !v.is_null();
}

bool equal(const nlohmann::json& a, const nlohmann::json& b) {
  if (a.is_number() && b.is_number()) return a.get<double>() == b.get<double>();
  return a == b;
}

nlohmann::json evaluate_node(const Node& n, const ConditionLookup& lookup) {
  switch (n.op) {
    case Node::Op::Literal: return n.literal;
    case Node::Op::Reference: return lookup(n.reference);
    case Node::Op::Not: return !truthy(evaluate_node(*n.left, lookup));
    case Node::Op::And: return truthy(evaluate_node(*n.left, lookup)) && truthy(evaluate_node(*n.right, lookup));
    case Node::Op::Or: return truthy(evaluate_node(*n.left, lookup)) || truthy(evaluate_node(*n.right, lookup));
    case Node::Op::Eq: return equal(evaluate_node(*n.left, lookup), evaluate_node(*n.right, lookup));
    case Node::Op::Ne: return !equal(evaluate_node(*n.left, lookup), evaluate_node(*n.right, lookup));
    default: {
      nlohmann::json a = evaluate_node(*n.left, lookup), b = evaluate_node(*n.right, lookup);
      if (!a.is_number() || !b.is_number()) return false;
      double x = a.get<double>(), y = b.get<double>();
      if (n.op == Node::Op::Lt) return x < y;
      if (n.op == Node::Op::Le) return x <= y;
      if (n.op == Node::Op::Gt) return x > y;
      return x >= y;
    }
  }
}

}  // namespace

Condition Condition::parse(const std::string& text) {
  Condition c;
  c.root_ = Parser(tokenize(text), c.references_).parse_all();
  return c;
}

bool Condition::evaluate(const ConditionLookup& lookup) const { return truthy(evaluate_node(*root_, lookup)); }

}  // namespace diagnose
