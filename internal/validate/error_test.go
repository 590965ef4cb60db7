package validate

import "testing"

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
