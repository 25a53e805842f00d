package fake

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// attrFunc returns the values of a filterable attribute of one resource.
type attrFunc func(name string) []string

// checkFilters rejects filter names the API does not know, as EC2 does.
// Tag filters (tag:<key>, tag-key, tag-value) are always known.
func checkFilters(api string, filters []ec2types.Filter, known ...string) error {
	for _, flt := range filters {
		name := deref(flt.Name)
		if strings.HasPrefix(name, "tag:") || name == "tag-key" || name == "tag-value" {
			continue
		}
		ok := false
		for _, k := range known {
			if k == name {
				ok = true
				break
			}
		}
		if !ok {
			return invalidFilter(api, name)
		}
	}
	return nil
}

// matchFilters reports whether a resource with tags and attributes passes all
// filters: filters are ANDed, the values of one filter ORed, and values may
// use the * and ? wildcards.
func matchFilters(filters []ec2types.Filter, tags map[string]string, attr attrFunc) bool {
	for _, flt := range filters {
		name := deref(flt.Name)
		var have []string
		switch {
		case strings.HasPrefix(name, "tag:"):
			v, ok := tags[strings.TrimPrefix(name, "tag:")]
			if !ok {
				return false
			}
			have = []string{v}
		case name == "tag-key":
			// Matching does not depend on the order of the keys; a key
			// without wildcards is looked up rather than matched against
			// every tag (listing instances by tag is what the
			// controllers do every few minutes).
			if !anyTagKey(flt.Values, tags) {
				return false
			}
			continue
		case name == "tag-value":
			for _, v := range tags {
				have = append(have, v)
			}
		default:
			have = attr(name)
		}
		if !anyMatch(flt.Values, have) {
			return false
		}
	}
	return true
}

// anyTagKey reports whether a key of tags matches one of the patterns.
func anyTagKey(patterns []string, tags map[string]string) bool {
	for _, p := range patterns {
		if !strings.ContainsAny(p, "*?") {
			if _, ok := tags[p]; ok {
				return true
			}
			continue
		}
		for k := range tags {
			if wildcard(p, k) {
				return true
			}
		}
	}
	return false
}

func anyMatch(patterns, values []string) bool {
	for _, p := range patterns {
		for _, v := range values {
			if wildcard(p, v) {
				return true
			}
		}
	}
	return false
}

// wildcard matches s against a pattern where * is any run of characters and ?
// any single character. Unlike path.Match, / is not special.
func wildcard(pattern, s string) bool {
	if !strings.ContainsAny(pattern, "*?") {
		return pattern == s
	}
	p, v := []rune(pattern), []rune(s)
	pi, vi := 0, 0
	star, mark := -1, 0
	for vi < len(v) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == v[vi]):
			pi++
			vi++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, vi
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			vi = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// pageSpec is an API's pagination contract.
type pageSpec struct {
	def, min, max int // default page size (0: everything), MaxResults bounds
}

// paginate returns the page of items that token and maxResults select, and
// the token of the next page. Tokens are opaque to callers.
func paginate[T any](api string, items []T, token *string, maxResults *int32, spec pageSpec) ([]T, *string, error) {
	start := 0
	if t := deref(token); t != "" {
		raw, err := base64.RawURLEncoding.DecodeString(t)
		var n int
		if err == nil {
			rest, ok := strings.CutPrefix(string(raw), api+":")
			if ok {
				n, err = strconv.Atoi(rest)
			} else {
				err = fmt.Errorf("foreign token")
			}
		}
		if err != nil || n < 0 || n > len(items) {
			return nil, nil, paramError(api, "InvalidNextToken", "The specified NextToken is not valid.")
		}
		start = n
	}
	size := spec.def
	if maxResults != nil {
		m := int(*maxResults)
		if (spec.min > 0 && m < spec.min) || (spec.max > 0 && m > spec.max) {
			return nil, nil, paramError(api, "InvalidParameterValue", fmt.Sprintf("Value ( %d ) for parameter maxResults is invalid. Parameter must be between %d and %d.", m, spec.min, spec.max))
		}
		size = m
	}
	if size <= 0 || start+size >= len(items) {
		return items[start:], nil, nil
	}
	next := base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf("%s:%d", api, start+size)))
	return items[start : start+size], &next, nil
}

func tagsToMap(tags []ec2types.Tag) map[string]string {
	m := map[string]string{}
	for _, t := range tags {
		m[deref(t.Key)] = deref(t.Value)
	}
	return m
}

func mapToTags(m map[string]string) []ec2types.Tag {
	if len(m) == 0 {
		return nil
	}
	// The keys and values the tags point to are new for every reply, in one
	// array rather than two allocations per tag.
	keys := sortedKeys(m)
	strs := make([]string, 2*len(keys))
	out := make([]ec2types.Tag, len(keys))
	for i, k := range keys {
		strs[2*i], strs[2*i+1] = k, m[k]
		out[i] = ec2types.Tag{Key: &strs[2*i], Value: &strs[2*i+1]}
	}
	return out
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// tagsFor collects the tags of the given resource type from tag specifications.
func tagsFor(specs []ec2types.TagSpecification, resourceType string) map[string]string {
	out := map[string]string{}
	for _, s := range specs {
		if string(s.ResourceType) == resourceType {
			for _, t := range s.Tags {
				out[deref(t.Key)] = deref(t.Value)
			}
		}
	}
	return out
}

func one(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// paramError is an invalid-parameter error in the dialect of api's service.
func paramError(api, ec2Code, message string) error {
	svc := serviceOf(api)
	code := ec2Code
	if svc.id != "EC2" {
		switch ec2Code {
		case "InvalidNextToken":
			code = "InvalidNextTokenException"
		default:
			code = "InvalidParameterException"
		}
	}
	return newAPIError(svc, api, code, message, 400)
}
