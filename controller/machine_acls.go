package controller

import (
	"fmt"
	"maps"
	"slices"

	"github.com/partlog/partlog/auth"
	"github.com/partlog/partlog/kafka"
)

// CreateACLs stores acls, in one commit, and returns for each nil or why
// it was not stored: kafka.ErrInvalidRequest for one auth.ACL.Validate
// refuses, or whose name, principal or host is longer than a metadata
// record holds (4096 bytes). An ACL the machine already stores — or that
// acls names twice — is stored once, with no error, as Kafka's
// CreateAcls does. Each new ACL gets the next id (Record.ACLID). The
// error is the commit's: then none of acls was stored.
func (c *Machine) CreateACLs(acls []auth.ACL) ([]error, error) {
	stored := make(map[auth.ACL]bool, len(c.acls)+len(acls))
	for _, acl := range c.acls {
		stored[acl] = true
	}
	errs := make([]error, len(acls))
	var recs []Record
	id := c.nextACLID
	for i, acl := range acls {
		if err := acl.Validate(); err != nil {
			errs[i] = fmt.Errorf("%w: %w", kafka.ErrInvalidRequest, err)
			continue
		}
		if len(acl.ResourceName) > maxMetadataList || len(acl.Principal) > maxMetadataList || len(acl.Host) > maxMetadataList {
			errs[i] = fmt.Errorf("%w: an ACL's resource name, principal and host are at most %d bytes", kafka.ErrInvalidRequest, maxMetadataList)
			continue
		}
		if stored[acl] {
			continue
		}
		stored[acl] = true
		recs = append(recs, Record{Type: RecordAccessControlEntry, ACLID: id, ACL: acl})
		id++
	}
	if err := c.commit(recs); err != nil {
		return nil, err
	}
	return errs, nil
}

// DeleteACLs deletes the stored ACLs that filters select, in one commit,
// and returns for each filter, in order, the ACLs it selected: an ACL two
// filters select is deleted once and reported by both, as Kafka's
// DeleteAcls does. Each filter's ACLs are in id order (creation order,
// unless an id was given again); a filter that selects none has nil.
func (c *Machine) DeleteACLs(filters []auth.ACLFilter) ([][]auth.ACL, error) {
	ids := slices.Sorted(maps.Keys(c.acls))
	deleted := make([][]auth.ACL, len(filters))
	gone := map[uint64]bool{}
	for i, f := range filters {
		for _, id := range ids {
			if acl := c.acls[id]; f.Matches(acl) {
				deleted[i] = append(deleted[i], acl)
				gone[id] = true
			}
		}
	}
	var recs []Record
	for _, id := range ids {
		if gone[id] {
			recs = append(recs, Record{Type: RecordRemoveAccessControlEntry, ACLID: id})
		}
	}
	if err := c.commit(recs); err != nil {
		return nil, err
	}
	return deleted, nil
}

// aclsInOrder returns the ACLs of byID in id order; nil when there are
// none.
func aclsInOrder(byID map[uint64]auth.ACL) []auth.ACL {
	if len(byID) == 0 {
		return nil
	}
	out := make([]auth.ACL, 0, len(byID))
	for _, id := range slices.Sorted(maps.Keys(byID)) {
		out = append(out, byID[id])
	}
	return out
}
