package ratelimit

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// DefinitionID formats a definition identifier:
// <axis>:<entity_type>:<name>:<window_seconds>.
func DefinitionID(axis, entityType, name string, windowSeconds int) string {
	return axis + ":" + entityType + ":" + name + ":" + strconv.Itoa(windowSeconds)
}

// ParseDefinitionID splits a definition identifier. Axis and entity type never
// contain ':' and the window is a number, so the name is everything between
// the second ':' and the last one: names may contain ':' and '/' (tool names
// are <parent>:<leaf>) and still parse unambiguously.
func ParseDefinitionID(id string) (axis, entityType, name string, windowSeconds int, err error) {
	axis, rest, ok := strings.Cut(id, ":")
	if !ok || axis == "" {
		return "", "", "", 0, fmt.Errorf("definition id %q: want <axis>:<entity_type>:<name>:<window_seconds>", id)
	}
	entityType, rest, ok = strings.Cut(rest, ":")
	if !ok || entityType == "" {
		return "", "", "", 0, fmt.Errorf("definition id %q: want <axis>:<entity_type>:<name>:<window_seconds>", id)
	}
	i := strings.LastIndexByte(rest, ':')
	if i < 0 {
		return "", "", "", 0, fmt.Errorf("definition id %q: want <axis>:<entity_type>:<name>:<window_seconds>", id)
	}
	name, window := rest[:i], rest[i+1:]
	windowSeconds, err = parseWindow(window)
	if err != nil {
		return "", "", "", 0, fmt.Errorf("definition id %q: window %q: %w", id, window, err)
	}
	return axis, entityType, name, windowSeconds, nil
}

// parseWindow accepts only the canonical decimal form, so that formatting a
// parsed id gives back the same string.
func parseWindow(s string) (int, error) {
	if s == "" || len(s) > 9 || (len(s) > 1 && s[0] == '0') {
		return 0, errors.New("not a canonical positive integer")
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, errors.New("not a canonical positive integer")
		}
	}
	return strconv.Atoi(s)
}

// MembershipID formats a membership (or admin) identifier:
// <subject_type>:<subject>.
func MembershipID(subjectType, subject string) string {
	return subjectType + ":" + subject
}

// ParseMembershipID splits a membership identifier at its first ':'; the
// subject may itself contain ':'.
func ParseMembershipID(id string) (subjectType, subject string, err error) {
	subjectType, subject, ok := strings.Cut(id, ":")
	if !ok || subjectType == "" {
		return "", "", fmt.Errorf("membership id %q: want <subject_type>:<subject>", id)
	}
	return subjectType, subject, nil
}
