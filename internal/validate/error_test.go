package validate

import (
	"errors"
	"reflect"
	"testing"
)

func TestErrorJoinsMessages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  *Error
		want string
	}{
		{
			name: "one",
			err:  &Error{Errors: []FieldError{{Field: "axis", Message: "axis: bad"}}},
			want: "axis: bad",
		},
		{
			name: "several, in order",
			err: &Error{Errors: []FieldError{
				{Field: "axis", Message: "axis: bad"},
				{Field: "members[2]", Message: "members[2]: must not be empty"},
			}},
			want: "axis: bad; members[2]: must not be empty",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestUnder(t *testing.T) {
	t.Parallel()
	err := &Error{Errors: []FieldError{
		{Field: "name", Message: "name: must not be empty"},
		{Field: "members[2]", Message: "must be a server name"},
		{Message: "something about the whole object"},
	}}
	want := []FieldError{
		{Field: "definitions[3].name", Message: "definitions[3].name: must not be empty"},
		{Field: "definitions[3].members[2]", Message: "definitions[3].members[2]: must be a server name"},
		{Field: "definitions[3]", Message: "definitions[3]: something about the whole object"},
	}
	if got := Under("definitions[3]", err); !reflect.DeepEqual(got, want) {
		t.Errorf("Under:\n got %+v\nwant %+v", got, want)
	}
	want = []FieldError{{Field: "admins[0]", Message: "admins[0]: boom"}}
	if got := Under("admins[0]", errors.New("boom")); !reflect.DeepEqual(got, want) {
		t.Errorf("Under, plain error: got %+v, want %+v", got, want)
	}
}
