package store

import "errors"

func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) }
