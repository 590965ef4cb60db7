// Package httpgate is the net/http adapter of the enforcer: it builds an
// enforce.Call from a request and renders an enforce.Decision as status,
// problem body and rate-limit headers; it holds no rules of its own.
//
// Middleware decides the data-plane requests a gateway classifies and
// answers the refused ones; AuthMiddleware refuses addresses locked out for
// failed authentications before the gateway verifies credentials;
// SetHeaders writes the rate-limit headers of a decision (rlapi's
// /api/decide and pkg/envoyrls use it too); TargetFromURI, ClassifyURI and
// Classifier name the target a request path addresses, the way the
// reference gateway routes. What limits apply, and how a path is
// normalized for them, is pkg/enforce's.
package httpgate
