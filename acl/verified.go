package acl

import "sync/atomic"

// MaxVerified bounds the credentials a Verified remembers: only verified ones are, so only
// those who hold a password fill it; past the bound it starts again.
const MaxVerified = 64

// Verified remembers credentials (an authorization value, as a door receives it) and the user
// each verified as, while the ACL has not changed since (Registry.Changes): a door that gets
// the same credential on every request (Envoy's gRPC calls) need not hash it each time.
// Readers load it without a lock; a new credential copies it.
type Verified struct {
	p atomic.Pointer[verifiedGen]
}

// verifiedGen is one immutable generation of a Verified.
type verifiedGen struct {
	changes uint64 // Registry.Changes when the users were verified
	users   map[string]*User
}

// Get returns the user v verified as while the ACL's change count was changes, or nil.
func (cc *Verified) Get(changes uint64, v string) *User {
	e := cc.p.Load()
	if e == nil || e.changes != changes {
		return nil
	}
	return e.users[v]
}

// Put remembers that v verified as u; changes is the ACL's change count read before the
// verification, so that a change made during it voids the entry.
func (cc *Verified) Put(changes uint64, v string, u *User) {
	old := cc.p.Load()
	next := &verifiedGen{changes: changes, users: map[string]*User{v: u}}
	if old != nil && old.changes == changes && len(old.users) < MaxVerified {
		for k, ou := range old.users {
			next.users[k] = ou
		}
	}
	cc.p.CompareAndSwap(old, next) // losing a race only forgets: the next request verifies again
}
