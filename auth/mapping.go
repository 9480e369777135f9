package auth

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// ErrNoMatchingRule says no rule of ssl.principal.mapping.rules matched
// a client certificate's subject: the client is refused, as Kafka refuses
// it.
var ErrNoMatchingRule = errors.New("auth: no principal mapping rule matches the certificate's subject")

// MappingRules are Kafka's ssl.principal.mapping.rules: how the subject of
// a client certificate ("CN=alice,OU=eng,O=Acme,C=GB") becomes a user's
// name. The rules are tried in order, and the first whose pattern matches
// the whole subject names the user:
//
//	RULE:pattern/replacement/[L|U]   a regular expression, and the name it
//	                                 gives ($1 for its first group), in
//	                                 lower (L) or upper (U) case if asked
//	DEFAULT                          the subject as it is
//
// separated by commas: "RULE:^CN=(.*?),OU=eng.*$/$1/L,DEFAULT". A
// backslash escapes the next character of a pattern or replacement (\/ is
// a slash). Patterns are Go regular expressions (RE2: no lookaround),
// which for the rules Kafka's documentation gives match as Java's do. The
// zero MappingRules is DEFAULT alone, Kafka's default.
type MappingRules struct {
	rules []mappingRule
	text  string
}

// mappingRule is one rule of MappingRules.
type mappingRule struct {
	isDefault bool
	// pattern matches a whole subject; replacement is its template for
	// Regexp.Expand.
	pattern     *regexp.Regexp
	replacement string
	lower       bool
	upper       bool
}

// ParseMappingRules reads rules written as ssl.principal.mapping.rules
// writes them. Empty means DEFAULT.
func ParseMappingRules(s string) (MappingRules, error) {
	m := MappingRules{text: strings.TrimSpace(s)}
	rest := m.text
	for rest != "" {
		var r mappingRule
		switch {
		case strings.HasPrefix(rest, "DEFAULT"):
			r.isDefault = true
			rest = rest[len("DEFAULT"):]
		case strings.HasPrefix(rest, "RULE:"):
			pattern, after, ok := cutUnescaped(rest[len("RULE:"):], '/')
			if !ok {
				return MappingRules{}, fmt.Errorf("auth: principal mapping rule %q: no / after its pattern", rest)
			}
			replacement, after, ok := cutUnescaped(after, '/')
			if !ok {
				return MappingRules{}, fmt.Errorf("auth: principal mapping rule %q: no / after its replacement", rest)
			}
			if strings.HasPrefix(after, "L") || strings.HasPrefix(after, "U") {
				r.lower, r.upper = after[0] == 'L', after[0] == 'U'
				after = after[1:]
			}
			re, err := regexp.Compile("^(?:" + pattern + ")$")
			if err != nil {
				return MappingRules{}, fmt.Errorf("auth: principal mapping rule pattern %q: %v", pattern, err)
			}
			tmpl, err := expandTemplate(replacement, re.NumSubexp())
			if err != nil {
				return MappingRules{}, fmt.Errorf("auth: principal mapping rule replacement %q: %v", replacement, err)
			}
			r.pattern, r.replacement, rest = re, tmpl, after
		default:
			return MappingRules{}, fmt.Errorf("auth: principal mapping rule %q is neither RULE:pattern/replacement/[LU] nor DEFAULT", rest)
		}
		m.rules = append(m.rules, r)
		rest = strings.TrimLeft(rest, " \t")
		switch {
		case rest == "":
		case rest[0] == ',':
			rest = strings.TrimLeft(rest[1:], " \t")
		default:
			return MappingRules{}, fmt.Errorf("auth: principal mapping rules: %q where a comma should end a rule", rest)
		}
	}
	return m, nil
}

// cutUnescaped cuts s around the first sep that no backslash escapes.
func cutUnescaped(s string, sep byte) (before, after string, found bool) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case sep:
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// expandTemplate turns a Java replacement string — \x a literal x, $n a
// group — into a template for Regexp.Expand. As in Kafka, a $n past the
// pattern's groups is literal; as in Java, a group number takes as many
// digits as still name a group.
func expandTemplate(repl string, groups int) (string, error) {
	var b strings.Builder
	for i := 0; i < len(repl); i++ {
		switch c := repl[i]; {
		case c == '\\':
			if i+1 == len(repl) {
				return "", errors.New("it ends in a backslash")
			}
			i++
			if repl[i] == '$' {
				b.WriteString("$$")
			} else {
				b.WriteByte(repl[i])
			}
		case c == '$':
			j := i + 1
			if j == len(repl) || repl[j] < '0' || repl[j] > '9' {
				return "", errors.New("a $ not followed by a group number (write \\$ for a dollar)")
			}
			n := int(repl[j] - '0')
			for j++; j < len(repl) && repl[j] >= '0' && repl[j] <= '9' && n*10+int(repl[j]-'0') <= groups; j++ {
				n = n*10 + int(repl[j]-'0')
			}
			if n > groups {
				b.WriteString("$$" + repl[i+1:j])
			} else {
				b.WriteString("${" + strconv.Itoa(n) + "}")
			}
			i = j - 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// Map returns the user name the rules give the subject dn, or
// ErrNoMatchingRule.
func (m MappingRules) Map(dn string) (string, error) {
	if len(m.rules) == 0 {
		return dn, nil
	}
	for _, r := range m.rules {
		if r.isDefault {
			return dn, nil
		}
		match := r.pattern.FindStringSubmatchIndex(dn)
		if match == nil {
			continue
		}
		name := string(r.pattern.ExpandString(nil, r.replacement, dn, match))
		switch {
		case r.lower:
			name = strings.ToLower(name)
		case r.upper:
			name = strings.ToUpper(name)
		}
		return name, nil
	}
	return "", fmt.Errorf("%w: %q (rules %q)", ErrNoMatchingRule, dn, m.text)
}

// String returns the rules as they were written; DEFAULT for the zero
// value.
func (m MappingRules) String() string {
	if m.text == "" {
		return "DEFAULT"
	}
	return m.text
}
