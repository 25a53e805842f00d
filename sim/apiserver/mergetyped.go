package apiserver

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
)

// mergeTyped applies a decoded JSON merge patch (RFC 7386, decoded by
// decodeJSON) to v, an addressable Go value, in place. The result is what
// encoding v, merging the patch into the document and decoding the document
// into a zero value gives, for every part of v the patch reaches; the parts
// it does not reach are left as they are instead of going through JSON.
// Controllers send small patches (a list of conditions, a label, the
// resource version) to large objects, and taking the whole object through
// JSON for each was most of the cost of a write.
//
// It reports false, with v possibly half changed, when the patch reaches
// something it cannot merge as the document path would: an object patch
// for a type that decodes itself or has no fields, a key that matches a
// field only in another letter case, a field decoded with the ",string"
// option, a value that does not decode. The caller then applies the patch
// the long way to a fresh copy, which also gives the error the long way
// gives.
func mergeTyped(v reflect.Value, patch any) bool {
	obj, isObject := patch.(map[string]any)
	if !isObject {
		return setJSON(v, patch)
	}
	if decodesItself(v.Type()) {
		return false
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			// A merge into an absent value is the patch without its
			// nulls, decoded into a zero value.
			v.Set(reflect.New(v.Type().Elem()))
		}
		return mergeTyped(v.Elem(), patch)
	case reflect.Struct:
		fields := fieldsOf(v.Type())
		if fields == nil {
			return false
		}
		for key, pv := range obj {
			f, ok := fields.exact[key]
			if !ok {
				if fields.folded[strings.ToLower(key)] {
					return false
				}
				// Decoding ignores a key no field has.
				continue
			}
			if f.quoted {
				return false
			}
			fv := v.FieldByIndex(f.index)
			if pv == nil {
				fv.Set(reflect.Zero(fv.Type()))
				continue
			}
			if !mergeTyped(fv, pv) {
				return false
			}
		}
		return true
	case reflect.Map:
		if v.Type().Key().Kind() != reflect.String || decodesItself(v.Type().Key()) {
			return false
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		for key, pv := range obj {
			k := reflect.ValueOf(key).Convert(v.Type().Key())
			if pv == nil {
				v.SetMapIndex(k, reflect.Value{})
				continue
			}
			elem := reflect.New(v.Type().Elem()).Elem()
			if cur := v.MapIndex(k); cur.IsValid() {
				elem.Set(cur)
			}
			if !mergeTyped(elem, pv) {
				return false
			}
			v.SetMapIndex(k, elem)
		}
		return true
	}
	// An object for a list, a string, a number or an interface: the
	// document path replaces the value with the object and decodes it.
	return false
}

// setJSON replaces v with the decoding of the patch value p, as decoding the
// merged document into a zero value does for a value the patch replaces.
func setJSON(v reflect.Value, p any) bool {
	raw, err := json.Marshal(p)
	if err != nil {
		return false
	}
	v.Set(reflect.Zero(v.Type()))
	return json.Unmarshal(raw, v.Addr().Interface()) == nil
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// decodesItself reports whether JSON decoding of t is the type's own.
func decodesItself(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Implements(jsonUnmarshaler) || p.Implements(jsonUnmarshaler) || t.Implements(textUnmarshaler) || p.Implements(textUnmarshaler)
}

// jsonFields are a struct type's fields by JSON key, as encoding/json
// finds them: tags name them, untagged fields go by their Go name, and
// embedded structs without a name (`json:",inline"`) lend their fields.
type jsonFields struct {
	exact  map[string]jsonField
	folded map[string]bool // every key, lower-cased
}

type jsonField struct {
	index  []int
	quoted bool // the ",string" option
}

var fieldCache sync.Map // reflect.Type → *jsonFields (nil: not supported)

// fieldsOf returns t's fields by JSON key, or nil when t has a shape this
// merge does not follow (an embedded pointer, two fields with one key).
func fieldsOf(t reflect.Type) *jsonFields {
	if f, ok := fieldCache.Load(t); ok {
		return f.(*jsonFields)
	}
	fields := &jsonFields{exact: map[string]jsonField{}, folded: map[string]bool{}}
	if !collectFields(t, nil, fields) {
		fields = nil
	}
	fieldCache.Store(t, fields)
	return fields
}

func collectFields(t reflect.Type, prefix []int, out *jsonFields) bool {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		index := append(append([]int(nil), prefix...), i)
		if f.Anonymous && name == "" {
			switch {
			case f.Type.Kind() == reflect.Struct:
				if !collectFields(f.Type, index, out) {
					return false
				}
				continue
			case f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct:
				return false
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, dup := out.exact[name]; dup {
			return false
		}
		out.exact[name] = jsonField{index: index, quoted: strings.Contains(","+opts+",", ",string,")}
		out.folded[strings.ToLower(name)] = true
	}
	return true
}
