package wire

import (
	"encoding/base64"
	"fmt"
	"math"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// node is one dotted segment of the form keys: the keys
// TagSpecification.1.ResourceType and TagSpecification.1.Tag.1.Key share
// the nodes TagSpecification and 1. A node has a value when a key ends at
// it.
type node struct {
	key      string // the full form key up to this node
	value    string
	hasValue bool
	kids     map[string]*node
}

func (n *node) kid(seg string) *node {
	if n.kids == nil {
		n.kids = map[string]*node{}
	}
	k := n.kids[seg]
	if k == nil {
		key := seg
		if n.key != "" {
			key = n.key + "." + seg
		}
		k = &node{key: key}
		n.kids[seg] = k
	}
	return k
}

// segs are the segments under n, sorted so that of several bad keys the
// error always names the same one.
func (n *node) segs() []string {
	segs := make([]string, 0, len(n.kids))
	for s := range n.kids {
		segs = append(segs, s)
	}
	slices.Sort(segs)
	return segs
}

// leaf is a form key under n, to name in an error about n.
func (n *node) leaf() string {
	for !n.hasValue && len(n.kids) > 0 {
		n = n.kids[n.segs()[0]]
	}
	return n.key
}

// decoder decodes a query-protocol form into an SDK input.
type decoder struct {
	op string
	// ec2 selects EC2's dialect: flattened lists (Name.N rather than
	// Name.member.N) and EC2's member names (names.go).
	ec2 bool
}

func (d decoder) errorf(n *node, format string, args ...any) error {
	return fmt.Errorf("wire: %s: form key %q: %s", d.op, n.leaf(), fmt.Sprintf(format, args...))
}

// decode decodes form into in, a pointer to the operation's input struct.
func (d decoder) decode(form url.Values, in any) error {
	root := &node{}
	for key, values := range form {
		// The protocol's envelope, not a member of the input.
		if key == "Action" || key == "Version" {
			continue
		}
		if len(values) != 1 {
			return fmt.Errorf("wire: %s: form key %q appears %d times", d.op, key, len(values))
		}
		n := root
		for seg := range strings.SplitSeq(key, ".") {
			n = n.kid(seg)
		}
		n.value, n.hasValue = values[0], true
	}
	return d.structure(root, reflect.ValueOf(in).Elem())
}

var timeType = reflect.TypeFor[time.Time]()

func (d decoder) value(n *node, v reflect.Value) error {
	switch {
	case v.Type() == timeType:
		s, err := d.scalar(n)
		if err != nil {
			return err
		}
		// Both query protocols send timestamps as ISO 8601 date-times.
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return d.errorf(n, "not a date-time: %v", err)
		}
		v.Set(reflect.ValueOf(t))
		return nil
	case v.Kind() == reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		if err := d.value(n, p.Elem()); err != nil {
			return err
		}
		v.Set(p)
		return nil
	case v.Kind() == reflect.Struct:
		return d.structure(n, v)
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8:
		s, err := d.scalar(n)
		if err != nil {
			return err
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return d.errorf(n, "not base64: %v", err)
		}
		v.SetBytes(b)
		return nil
	case v.Kind() == reflect.Slice:
		return d.list(n, v)
	}
	s, err := d.scalar(n)
	if err != nil {
		return err
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return d.errorf(n, "not a boolean: %v", err)
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		i, err := strconv.ParseInt(s, 10, v.Type().Bits())
		if err != nil {
			return d.errorf(n, "not an integer: %v", err)
		}
		v.SetInt(i)
	case reflect.Float32, reflect.Float64:
		f, err := parseFloat(s, v.Type().Bits())
		if err != nil {
			return d.errorf(n, "not a number: %v", err)
		}
		v.SetFloat(f)
	default:
		return d.errorf(n, "field of type %s is not supported", v.Type())
	}
	return nil
}

// parseFloat reads the query protocols' numbers, which spell the
// non-finite values out.
func parseFloat(s string, bits int) (float64, error) {
	switch s {
	case "Infinity":
		return math.Inf(1), nil
	case "-Infinity":
		return math.Inf(-1), nil
	case "NaN":
		return math.NaN(), nil
	}
	return strconv.ParseFloat(s, bits)
}

func (d decoder) scalar(n *node) (string, error) {
	if len(n.kids) > 0 {
		return "", d.errorf(n, "a scalar member has nested keys")
	}
	return n.value, nil
}

func (d decoder) structure(n *node, v reflect.Value) error {
	if n.hasValue {
		return d.errorf(n, "a structure has a value")
	}
	set := map[string]string{} // Go field name to the segment that set it
	for _, seg := range n.segs() {
		f, ok := d.field(v.Type(), seg)
		if !ok {
			return d.errorf(n.kids[seg], "maps to no field of %s", v.Type())
		}
		// EC2 lists answer to two names (names.go); both at once would
		// have one overwrite the other.
		if prev, ok := set[f.Name]; ok {
			return d.errorf(n.kids[seg], "sets field %s of %s, as %s does", f.Name, v.Type(), n.kids[prev].key)
		}
		set[f.Name] = seg
		if err := d.value(n.kids[seg], v.FieldByIndex(f.Index)); err != nil {
			return err
		}
	}
	return nil
}

// list decodes a list: Name.1, Name.2, ... in EC2's dialect and
// Name.member.1, ... in AWS query's, where an empty list is sent as
// "Name=" so that it differs from an absent one.
func (d decoder) list(n *node, v reflect.Value) error {
	items := n
	if !d.ec2 {
		if n.hasValue && n.value == "" && len(n.kids) == 0 {
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
			return nil
		}
		if n.hasValue || len(n.kids) != 1 || n.kids["member"] == nil {
			return d.errorf(n, "a list is not keyed Name.member.N")
		}
		items = n.kids["member"]
	}
	if items.hasValue {
		return d.errorf(items, "a list has a value without an index")
	}
	segs := items.segs()
	s := reflect.MakeSlice(v.Type(), len(segs), len(segs))
	for _, seg := range segs {
		i, err := strconv.Atoi(seg)
		if err != nil || i < 1 || i > len(segs) || strconv.Itoa(i) != seg {
			// Indexes are 1..N with none missing: anything else would
			// leave a hole or drop an item.
			return d.errorf(items.kids[seg], "list index %q is not one of 1..%d", seg, len(segs))
		}
		if err := d.value(items.kids[seg], s.Index(i-1)); err != nil {
			return err
		}
	}
	v.Set(s)
	return nil
}
