package broker

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// Group configs (Kafka's GroupConfig, config resource type GROUP) live in
// the cluster metadata: any node takes a change and hands it to the
// controller, which checks it and commits it (controller.Machine.AlterGroupConfigs);
// every node then reads the group's settings from the metadata it has.

// groupConfigs returns the configs group sets itself, by Kafka's names
// (controller.GroupShareAutoOffsetReset, GroupShareRecordLockDurationMs,
// ...), as the cluster metadata this node has holds them: nil when the
// group sets none. Only the group's own settings are in it: the caller
// applies the default (controller.GroupConfigDefaults) of a config that
// is not. The values are as the controller checked and stored them — an
// integer in decimal, share.auto.offset.reset as
// controller.ParseShareAutoOffsetReset reads it — so that a caller need
// not check them again. A change reaches this node within a heartbeat of
// its commit (at once on the node that took it). The map is the
// caller's.
func (n *Broker) groupConfigs(group string) map[string]string {
	md, _ := n.member.metadata()
	return maps.Clone(md.GroupConfigs[group])
}

// alterGroupConfigs makes one group's config changes through the
// controller, which checks them (kafka.ErrInvalidConfig,
// ErrInvalidRequest), and waits until this node has them. The group need
// not exist.
func (n *Broker) alterGroupConfigs(ctx context.Context, a transport.ConfigAlteration, validateOnly bool) error {
	if a.Name == "" {
		return fmt.Errorf("%w: Default group resources are not allowed", kafka.ErrInvalidRequest)
	}
	return n.awaitChange(ctx)(n.member.ctl.AlterGroupConfigs(ctx, a.Name, a, validateOnly))
}

// groupConfigEntries returns every group config in force for group,
// sorted by name, marking those the group does not set as defaults, as
// Kafka answers a GROUP resource: a group without configs, or one that
// does not exist, has every default.
func (n *Broker) groupConfigEntries(group string) ([]transport.ConfigEntry, error) {
	if group == "" {
		return nil, fmt.Errorf("%w: Group name must not be empty", kafka.ErrInvalidRequest)
	}
	effective := controller.GroupConfigDefaults()
	own := n.groupConfigs(group)
	maps.Copy(effective, own)
	entries := make([]transport.ConfigEntry, 0, len(effective))
	for _, k := range slices.Sorted(maps.Keys(effective)) {
		_, set := own[k]
		entries = append(entries, transport.ConfigEntry{Name: k, Value: effective[k], IsDefault: !set})
	}
	return entries, nil
}
