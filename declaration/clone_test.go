package declaration_test

import (
	"reflect"
	"testing"

	"github.com/wisent/stado/declaration"
)

// fill sets every field of v (a struct reached through a pointer) to a
// non-zero value, recursively, so a shallow copy shows as shared memory.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
			}
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0))
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k)
		fill(e)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(1)
	}
}

// shared names the first field of a and b (same type) that points at the
// same memory.
func shared(a, b reflect.Value, path string) string {
	switch a.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map:
		if !a.IsNil() && a.UnsafePointer() == b.UnsafePointer() {
			return path
		}
		if a.Kind() == reflect.Pointer && !a.IsNil() {
			return shared(a.Elem(), b.Elem(), path)
		}
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			if a.Type().Field(i).IsExported() {
				if p := shared(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); p != "" {
					return p
				}
			}
		}
	}
	return ""
}

// A cloned declaration shares no pointer, slice or map with its source,
// however deep: every field set, the copy's memory is all its own.
func TestClonedServiceSharesNoMemoryWithItsSource(t *testing.T) {
	var s declaration.Service
	fill(reflect.ValueOf(&s).Elem())
	c := s.Clone()
	if p := shared(reflect.ValueOf(s), reflect.ValueOf(c), "Service"); p != "" {
		t.Fatalf("Clone shares %s with the source; deep-copy it in Service.Clone or UnitSettings.Clone", p)
	}
}
