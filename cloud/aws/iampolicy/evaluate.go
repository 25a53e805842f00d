package iampolicy

import (
	"path"
	"strings"
)

// Request is one authorization AWS evaluates: an action on a resource, with
// the condition keys of the request (aws:RequestTag/<key>,
// aws:ResourceTag/<key>, aws:TagKeys, ec2:CreateAction, iam:PassedToService,
// aws:RequestedRegion, ...). A call may need several: a launch is authorized
// once per resource it uses or creates.
type Request struct {
	Action   string
	Resource string
	Context  map[string][]string
}

// Allows reports whether an Allow statement of the policy grants r, and
// which. It models the parts of IAM evaluation that stevedore's and
// Karpenter's policies use: Allow statements, action and resource wildcards,
// and the operators StringEquals, StringLike, StringEqualsIfExists,
// StringLikeIfExists and ForAllValues:StringEquals. There are no Deny
// statements to evaluate.
func (p Policy) Allows(r Request) (sid string, ok bool) {
	for _, s := range p.Statement {
		if s.Effect != "Allow" || !anyMatch(s.Action, r.Action, true) || !anyMatch(s.Resource, r.Resource, false) {
			continue
		}
		if conditionsHold(s.Condition, r.Context) {
			return s.Sid, true
		}
	}
	return "", false
}

func anyMatch(patterns []string, v string, fold bool) bool {
	for _, p := range patterns {
		if fold {
			p, v = strings.ToLower(p), strings.ToLower(v)
		}
		if glob(p, v) {
			return true
		}
	}
	return false
}

// glob matches IAM's wildcards: * any run of characters (slashes included)
// and ? one character.
func glob(pattern, v string) bool {
	// path.Match treats / specially; IAM does not. Escape the slashes away.
	const sep = "\x00"
	ok, err := path.Match(strings.ReplaceAll(pattern, "/", sep), strings.ReplaceAll(v, "/", sep))
	return err == nil && ok
}

func conditionsHold(cond map[string]map[string][]string, ctx map[string][]string) bool {
	for op, keys := range cond {
		for key, want := range keys {
			got, present := lookupKey(ctx, key)
			if !holds(op, want, got, present) {
				return false
			}
		}
	}
	return true
}

// lookupKey finds a condition key; the key's prefix (aws:RequestTag/ ...)
// is case-insensitive, the tag key after it is not.
func lookupKey(ctx map[string][]string, key string) ([]string, bool) {
	if v, ok := ctx[key]; ok {
		return v, true
	}
	for k, v := range ctx {
		if strings.EqualFold(k, key) && tagPart(k) == tagPart(key) {
			return v, true
		}
	}
	return nil, false
}

func tagPart(k string) string {
	if i := strings.Index(k, "/"); i >= 0 {
		return k[i+1:]
	}
	return ""
}

func holds(op string, want, got []string, present bool) bool {
	eq := func(a, b string) bool { return a == b }
	like := func(p, v string) bool { return glob(p, v) }
	some := func(m func(string, string) bool) bool {
		for _, g := range got {
			for _, w := range want {
				if m(w, g) {
					return true
				}
			}
		}
		return false
	}
	switch op {
	case "StringEquals":
		return present && some(eq)
	case "StringLike":
		return present && some(like)
	case "StringEqualsIfExists":
		return !present || some(eq)
	case "StringLikeIfExists":
		return !present || some(like)
	case "ForAllValues:StringEquals":
		for _, g := range got {
			found := false
			for _, w := range want {
				if w == g {
					found = true
				}
			}
			if !found {
				return false
			}
		}
		return true
	}
	// An operator this evaluator does not model never holds, so a policy
	// using one fails loudly in tests rather than passing by accident.
	return false
}
