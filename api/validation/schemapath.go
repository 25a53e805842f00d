package validation

import (
	"strconv"
	"strings"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
)

// schemaAt returns the structural schema node at a field path in any of the
// formats the server uses ("a.b[0].c", "a.b.key" for map keys from the
// OpenAPI validator, "a.b[key]" from CEL), or nil.
func schemaAt(s *structuralschema.Structural, path string) *structuralschema.Structural {
	// inKey is set after descending into a map by a dotted segment: the
	// OpenAPI validator joins map keys with dots, so a key such as
	// "karpenter.sh/foo" spans several segments.
	inKey := false
	for _, seg := range splitFieldPath(path) {
		if s == nil {
			return nil
		}
		if strings.HasPrefix(seg, "[") {
			inKey = false
			key := strings.TrimSuffix(strings.TrimPrefix(seg, "["), "]")
			if _, err := strconv.Atoi(key); err == nil && s.Items != nil {
				s = s.Items
				continue
			}
			if s.AdditionalProperties != nil {
				s = s.AdditionalProperties.Structural
				continue
			}
			if p, ok := s.Properties[key]; ok {
				s = &p
				continue
			}
			return nil
		}
		if p, ok := s.Properties[seg]; ok {
			s, inKey = &p, false
			continue
		}
		if s.AdditionalProperties != nil {
			s, inKey = s.AdditionalProperties.Structural, true
			continue
		}
		if inKey {
			continue // the rest of a dotted map key
		}
		return nil
	}
	return s
}

// valueAt returns the value at a field path in an unstructured object.
func valueAt(obj interface{}, path string) (interface{}, bool) {
	cur := obj
	segs := splitFieldPath(path)
	for i := 0; i < len(segs); i++ {
		seg := segs[i]
		if strings.HasPrefix(seg, "[") {
			key := strings.TrimSuffix(strings.TrimPrefix(seg, "["), "]")
			switch c := cur.(type) {
			case []interface{}:
				n, err := strconv.Atoi(key)
				if err != nil || n < 0 || n >= len(c) {
					return nil, false
				}
				cur = c[n]
			case map[string]interface{}:
				v, ok := c[key]
				if !ok {
					return nil, false
				}
				cur = v
			default:
				return nil, false
			}
			continue
		}
		m, ok := cur.(map[string]interface{})
		if !ok {
			return nil, false
		}
		// A map key may contain dots and so span several segments.
		key := seg
		v, ok := m[key]
		for j := i + 1; !ok && j < len(segs) && !strings.HasPrefix(segs[j], "["); j++ {
			key += "." + segs[j]
			if v, ok = m[key]; ok {
				i = j
			}
		}
		if !ok {
			return nil, false
		}
		cur = v
	}
	return cur, true
}

// parentPath splits "a.b[1].c" into "a.b[1]" and "c", and "a.b[1]" into
// "a.b" and "[1]".
func parentPath(path string) (parent, last string) {
	segs := splitFieldPath(path)
	if len(segs) == 0 {
		return "", ""
	}
	return joinFieldPath(segs[:len(segs)-1]), segs[len(segs)-1]
}

func joinFieldPath(segs []string) string {
	var b strings.Builder
	for i, s := range segs {
		if i > 0 && !strings.HasPrefix(s, "[") {
			b.WriteString(".")
		}
		b.WriteString(s)
	}
	return b.String()
}

// closest returns the candidate nearest to s when it is a plausible typo:
// equal ignoring case, or within an edit distance of two (one for short words).
func closest(s string, candidates []string) string {
	best, bestDist := "", 1<<30
	for _, c := range candidates {
		if c == s {
			continue
		}
		if strings.EqualFold(c, s) {
			return c
		}
		d := editDistance(strings.ToLower(s), strings.ToLower(c))
		if d < bestDist || (d == bestDist && c < best) {
			best, bestDist = c, d
		}
	}
	limit := 2
	switch {
	case len(s) <= 2:
		limit = 0
	case len(s) <= 4:
		limit = 1
	}
	if bestDist <= limit {
		return best
	}
	return ""
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
