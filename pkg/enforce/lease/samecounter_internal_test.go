package lease

import (
	"reflect"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
)

// sameCounter compares every field of a gate but its key and the key's
// parts (a function of the key: counterkey.PartsOf): a field added to
// enforce.CounterGate and left out of it would let a lease outlive a change
// of its definition. Each other field, changed alone, must make it false.
func TestSameCounterComparesEveryFieldButTheKey(t *testing.T) {
	t.Parallel()
	base := enforce.CounterGate{Key: "k", Algorithm: enforce.AlgorithmFixedWindow, Window: time.Minute, Limit: 10, Burst: 10,
		Enforce: true, Lease: enforce.LeaseAuto}
	if !sameCounter(base, base) {
		t.Fatal("a gate is not the same counter as itself")
	}
	typ := reflect.TypeOf(base)
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Name == "Parts" {
			continue // the key's, which leases are found by
		}
		changed := base
		v := reflect.ValueOf(&changed).Elem().Field(i)
		switch v.Kind() {
		case reflect.String:
			v.SetString(v.String() + "x")
		case reflect.Int64:
			v.SetInt(v.Int() + 1)
		case reflect.Bool:
			v.SetBool(!v.Bool())
		case reflect.Uint8:
			v.SetUint(v.Uint() + 1)
		default:
			t.Fatalf("CounterGate.%s is a %s: teach this test (and sameCounter) to change it", f.Name, v.Kind())
		}
		if got, want := sameCounter(base, changed), f.Name == "Key"; got != want {
			t.Errorf("sameCounter with %s changed = %v, want %v", f.Name, got, want)
		}
	}
}
