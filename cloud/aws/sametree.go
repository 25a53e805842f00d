package aws

import "reflect"

// sameTree reports whether a and b, values of the same type, are equal
// field by field, following pointers, slices and maps. It is
// reflect.DeepEqual without cycle tracking: the AWS SDK's outputs are trees
// of plain data, and the tracking (a map entry per pointer) made comparing a
// full instance-type listing cost more than modelling the types again from
// it. It errs towards "different": nil and empty slices or maps differ, and
// values it cannot compare (functions, channels) and NaNs count as changed,
// so a refresh that cannot show nothing changed rebuilds.
func sameTree(a, b reflect.Value) bool {
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() && b.IsNil()
		}
		return a.Pointer() == b.Pointer() || sameTree(a.Elem(), b.Elem())
	case reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() && b.IsNil()
		}
		return a.Elem().Type() == b.Elem().Type() && sameTree(a.Elem(), b.Elem())
	case reflect.Struct:
		for i := range a.NumField() {
			if !sameTree(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Slice:
		if a.IsNil() != b.IsNil() {
			return false
		}
		fallthrough
	case reflect.Array:
		if a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !sameTree(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		for it := a.MapRange(); it.Next(); {
			v := b.MapIndex(it.Key())
			if !v.IsValid() || !sameTree(it.Value(), v) {
				return false
			}
		}
		return true
	case reflect.String:
		return a.String() == b.String()
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return a.Uint() == b.Uint()
	case reflect.Float32, reflect.Float64:
		return a.Float() == b.Float()
	case reflect.Complex64, reflect.Complex128:
		return a.Complex() == b.Complex()
	}
	return false
}

// same is sameTree of two values of type T.
func same[T any](a, b T) bool {
	return sameTree(reflect.ValueOf(&a).Elem(), reflect.ValueOf(&b).Elem())
}
