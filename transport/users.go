package transport

import (
	"context"

	"github.com/partlog/partlog/auth"
	"github.com/partlog/partlog/kafka"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// UserAdminClient is the optional interface of a handler that manages the
// users SASL listeners authenticate: their SCRAM credentials (Kafka's
// AlterUserScramCredentials and DescribeUserScramCredentials, KIP-554).
type UserAdminClient interface {
	AlterUserScramCredentials(ctx context.Context, req *AlterUserScramCredentialsRequest) (*AlterUserScramCredentialsResponse, error)
	DescribeUserScramCredentials(ctx context.Context, req *DescribeUserScramCredentialsRequest) (*DescribeUserScramCredentialsResponse, error)
}

func isUserAdminClient(h Client) bool { _, ok := h.(UserAdminClient); return ok }

// AlterUserScramCredentialsRequest deletes and sets users' SCRAM
// credentials. A client sends the salted password (PBKDF2 of the password
// with the salt and iterations), never the password.
type AlterUserScramCredentialsRequest struct {
	// Deletions are the credentials to delete.
	Deletions []ScramCredentialDeletion
	// Upsertions are the credentials to set.
	Upsertions []ScramCredentialUpsertion
}

// ScramCredentialDeletion deletes a user's credential for a mechanism.
type ScramCredentialDeletion struct {
	// User and Mechanism name the credential; Mechanism is one of
	// auth.ScramMechanisms ("" for one the client named by a number
	// partlog does not know).
	User, Mechanism string
}

// ScramCredentialUpsertion sets a user's credential for a mechanism.
type ScramCredentialUpsertion struct {
	// User and Mechanism name the credential.
	User, Mechanism string
	// Iterations, Salt and SaltedPassword are the password salted as
	// SCRAM salts it.
	Iterations     int
	Salt           []byte
	SaltedPassword []byte
}

// AlterUserScramCredentialsResponse answers each user of the request.
type AlterUserScramCredentialsResponse struct {
	// Results are one per user named in the request.
	Results []UserResult
}

// UserResult is a user's outcome.
type UserResult struct {
	// User is the user's name.
	User string
	// Err is nil, or why the user's changes were not made, all of them:
	// kafka.ErrResourceNotFound, ErrDuplicateResource,
	// ErrUnacceptableCredential, ErrUnsupportedSaslMechanism.
	Err error
}

// DescribeUserScramCredentialsRequest asks which SCRAM credentials users
// have.
type DescribeUserScramCredentialsRequest struct {
	// Users are the users to describe; nil describes every user that has
	// a credential.
	Users []string
}

// DescribeUserScramCredentialsResponse answers a
// DescribeUserScramCredentialsRequest.
type DescribeUserScramCredentialsResponse struct {
	// Err is the request's error, if it failed whole.
	Err error
	// Results are one per user.
	Results []UserScramCredentials
}

// UserScramCredentials are what a user has: the mechanisms and iteration
// counts of its credentials, never their keys.
type UserScramCredentials struct {
	// User is the user's name.
	User string
	// Err is kafka.ErrResourceNotFound for a user named in the request
	// that has no credential.
	Err error
	// Credentials are the user's, by mechanism order.
	Credentials []ScramCredentialInfo
}

// ScramCredentialInfo says a user has a credential for a mechanism.
type ScramCredentialInfo struct {
	// Mechanism is one of auth.ScramMechanisms.
	Mechanism string
	// Iterations is the credential's iteration count.
	Iterations int
}

// AlterUserScramCredentials sends an AlterUserScramCredentials request.
func (c *TCPClient) AlterUserScramCredentials(ctx context.Context, req *AlterUserScramCredentialsRequest) (*AlterUserScramCredentialsResponse, error) {
	return roundTrip(ctx, c, connOther, 51, req, alterUserScramToWire, alterUserScramResponseFromWire)
}

// DescribeUserScramCredentials sends a DescribeUserScramCredentials
// request.
func (c *TCPClient) DescribeUserScramCredentials(ctx context.Context, req *DescribeUserScramCredentialsRequest) (*DescribeUserScramCredentialsResponse, error) {
	return roundTrip(ctx, c, connOther, 50, req, describeUserScramToWire, describeUserScramResponseFromWire)
}

// dispatchUserAdmin calls a UserAdminClient handler for one decoded
// request, or reports that req is not one of its.
func dispatchUserAdmin(ctx context.Context, h UserAdminClient, req kmsg.Request, version int16) (kmsg.Response, bool, error) {
	var resp kmsg.Response
	var err error
	switch req := req.(type) {
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		resp, err = answerWith(ctx, h.AlterUserScramCredentials, alterUserScramFromWire(req), alterUserScramResponseToWire, version)
	case *kmsg.DescribeUserSCRAMCredentialsRequest:
		resp, err = answerWith(ctx, h.DescribeUserScramCredentials, describeUserScramFromWire(req), describeUserScramResponseToWire, version)
	default:
		return nil, false, nil
	}
	return resp, true, err
}

// scramMechanismCodes are Kafka's numbers for the SCRAM mechanisms.
var scramMechanismCodes = map[string]int8{auth.MechanismScramSHA256: 1, auth.MechanismScramSHA512: 2}

func scramMechanismCode(m string) int8 { return scramMechanismCodes[m] } // 0: UNKNOWN

func scramMechanismName(code int8) string {
	for m, c := range scramMechanismCodes {
		if c == code {
			return m
		}
	}
	return ""
}

func alterUserScramToWire(r *AlterUserScramCredentialsRequest, version int16) *kmsg.AlterUserSCRAMCredentialsRequest {
	w := versioned(kmsg.NewPtrAlterUserSCRAMCredentialsRequest(), version)
	w.Deletions = each(r.Deletions, func(d ScramCredentialDeletion) kmsg.AlterUserSCRAMCredentialsRequestDeletion {
		return kmsg.AlterUserSCRAMCredentialsRequestDeletion{Name: d.User, Mechanism: scramMechanismCode(d.Mechanism)}
	})
	w.Upsertions = each(r.Upsertions, func(u ScramCredentialUpsertion) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
		return kmsg.AlterUserSCRAMCredentialsRequestUpsertion{Name: u.User, Mechanism: scramMechanismCode(u.Mechanism),
			Iterations: int32(u.Iterations), Salt: u.Salt, SaltedPassword: u.SaltedPassword}
	})
	return w
}

func alterUserScramFromWire(w *kmsg.AlterUserSCRAMCredentialsRequest) *AlterUserScramCredentialsRequest {
	return &AlterUserScramCredentialsRequest{
		Deletions: each(w.Deletions, func(d kmsg.AlterUserSCRAMCredentialsRequestDeletion) ScramCredentialDeletion {
			return ScramCredentialDeletion{User: d.Name, Mechanism: scramMechanismName(d.Mechanism)}
		}),
		Upsertions: each(w.Upsertions, func(u kmsg.AlterUserSCRAMCredentialsRequestUpsertion) ScramCredentialUpsertion {
			return ScramCredentialUpsertion{User: u.Name, Mechanism: scramMechanismName(u.Mechanism), Iterations: int(u.Iterations),
				Salt: u.Salt, SaltedPassword: u.SaltedPassword}
		}),
	}
}

func alterUserScramResponseToWire(r *AlterUserScramCredentialsResponse, version int16) *kmsg.AlterUserSCRAMCredentialsResponse {
	w := versioned(kmsg.NewPtrAlterUserSCRAMCredentialsResponse(), version)
	w.Results = each(r.Results, func(u UserResult) kmsg.AlterUserSCRAMCredentialsResponseResult {
		return kmsg.AlterUserSCRAMCredentialsResponseResult{User: u.User, ErrorCode: kafka.CodeOf(u.Err), ErrorMessage: errorMessage(u.Err)}
	})
	return w
}

func alterUserScramResponseFromWire(w *kmsg.AlterUserSCRAMCredentialsResponse) *AlterUserScramCredentialsResponse {
	return &AlterUserScramCredentialsResponse{Results: each(w.Results, func(u kmsg.AlterUserSCRAMCredentialsResponseResult) UserResult {
		return UserResult{User: u.User, Err: wireError(u.ErrorCode, u.ErrorMessage)}
	})}
}

func describeUserScramToWire(r *DescribeUserScramCredentialsRequest, version int16) *kmsg.DescribeUserSCRAMCredentialsRequest {
	w := versioned(kmsg.NewPtrDescribeUserSCRAMCredentialsRequest(), version)
	if r.Users != nil {
		w.Users = each(r.Users, func(u string) kmsg.DescribeUserSCRAMCredentialsRequestUser {
			return kmsg.DescribeUserSCRAMCredentialsRequestUser{Name: u}
		})
	}
	return w
}

func describeUserScramFromWire(w *kmsg.DescribeUserSCRAMCredentialsRequest) *DescribeUserScramCredentialsRequest {
	r := &DescribeUserScramCredentialsRequest{}
	if w.Users != nil {
		r.Users = each(w.Users, func(u kmsg.DescribeUserSCRAMCredentialsRequestUser) string { return u.Name })
	}
	return r
}

func describeUserScramResponseToWire(r *DescribeUserScramCredentialsResponse, version int16) *kmsg.DescribeUserSCRAMCredentialsResponse {
	w := versioned(kmsg.NewPtrDescribeUserSCRAMCredentialsResponse(), version)
	w.ErrorCode, w.ErrorMessage = kafka.CodeOf(r.Err), errorMessage(r.Err)
	w.Results = each(r.Results, func(u UserScramCredentials) kmsg.DescribeUserSCRAMCredentialsResponseResult {
		return kmsg.DescribeUserSCRAMCredentialsResponseResult{User: u.User, ErrorCode: kafka.CodeOf(u.Err), ErrorMessage: errorMessage(u.Err),
			CredentialInfos: each(u.Credentials, func(c ScramCredentialInfo) kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo {
				return kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo{Mechanism: scramMechanismCode(c.Mechanism), Iterations: int32(c.Iterations)}
			})}
	})
	return w
}

func describeUserScramResponseFromWire(w *kmsg.DescribeUserSCRAMCredentialsResponse) *DescribeUserScramCredentialsResponse {
	return &DescribeUserScramCredentialsResponse{Err: wireError(w.ErrorCode, w.ErrorMessage),
		Results: each(w.Results, func(u kmsg.DescribeUserSCRAMCredentialsResponseResult) UserScramCredentials {
			return UserScramCredentials{User: u.User, Err: wireError(u.ErrorCode, u.ErrorMessage),
				Credentials: each(u.CredentialInfos, func(c kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo) ScramCredentialInfo {
					return ScramCredentialInfo{Mechanism: scramMechanismName(c.Mechanism), Iterations: int(c.Iterations)}
				})}
		})}
}
