package client

import (
	"context"
	"net/http"

	"github.com/rlctl/rlctl/pkg/ratelimit"
	"github.com/rlctl/rlctl/pkg/wire"
)

// ListAdmins returns every administrator.
func (c *Client) ListAdmins(ctx context.Context) ([]ratelimit.Admin, error) {
	var body wire.AdminList
	resp, err := c.do(ctx, request{method: http.MethodGet, path: "/api/rate-limit-admins"})
	if err == nil {
		err = resp.decode(&body)
	}
	return body.Admins, wrap(err, "list admins")
}

// PutAdmin grants administrator privileges to the subject named by a. Only
// subject_type, subject and note are sent: the rest of an Admin is the
// server's record of the grant. A quarantined subject cannot be made an
// administrator (ErrQuarantinedAdmin, an ErrConflict).
func (c *Client) PutAdmin(ctx context.Context, a ratelimit.Admin, o WriteOptions) (PutResult[ratelimit.Admin], error) {
	id := a.Key()
	seg, err := segment(id)
	if err != nil {
		return PutResult[ratelimit.Admin]{}, wrap(err, "put admin %q", id)
	}
	body := ratelimit.Admin{SubjectType: a.SubjectType, Subject: a.Subject, Note: a.Note}
	r := request{method: http.MethodPut, path: "/api/rate-limit-admins/" + seg, body: body}
	o.apply(&r)
	res, err := doPut[ratelimit.Admin](ctx, c, r, o, nil)
	return res, wrap(err, "put admin %q", id)
}

// DeleteAdmin revokes a subject's administrator privileges. It returns a
// report only for a dry run.
func (c *Client) DeleteAdmin(ctx context.Context, subjectType, subject string, o WriteOptions) (*DryRunReport, error) {
	id := ratelimit.MembershipID(subjectType, subject)
	seg, err := segment(id)
	if err != nil {
		return nil, wrap(err, "delete admin %q", id)
	}
	r := request{method: http.MethodDelete, path: "/api/rate-limit-admins/" + seg}
	o.apply(&r)
	rep, err := doDelete(ctx, c, r, o)
	return rep, wrap(err, "delete admin %q", id)
}
