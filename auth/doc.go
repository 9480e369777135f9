// Package auth says who is at the other end of a connection: the
// principal that Kafka's authorizer sees ("User:alice"), and how a TLS
// client certificate maps to one, as Kafka's ssl.principal.mapping.rules
// map it.
//
// A connection to a TLS listener with a client certificate is the
// principal its certificate's subject maps to; one without a certificate,
// or to a plaintext listener, is User:ANONYMOUS, as in Kafka. The
// transport's server puts the principal in the context its handlers get
// (FromContext). In-process callers of a node are trusted and carry none.
package auth
