package main

import (
	"context"
	"fmt"
	"io"

	"github.com/partlog/partlog/transport"
)

// entityGroups is the entity type of group configs, as kafka-configs.sh
// names it.
const entityGroups = "groups"

// describeGroupConfigs prints the configs of group, or of every group the
// target lists when group is "", as kafka-configs.sh --describe does:
// those the group sets itself, or with all every config in force. A
// group that sets none, or does not exist, has every default.
func describeGroupConfigs(ctx context.Context, t *target, group string, all bool, stdout io.Writer) error {
	groups := []string{group}
	if group == "" {
		gc, err := t.groups()
		if err != nil {
			return err
		}
		if groups, err = (groupTarget{t, gc}).groupIDs(ctx); err != nil {
			return fmt.Errorf("listing the groups: %s", serverMessage(err))
		}
	}
	which := "Dynamic"
	if all {
		which = "All"
	}
	for _, g := range groups {
		entries, err := describeResource(ctx, t.admin(), transport.ConfigResource{Type: transport.ConfigGroup, Name: g})
		if err != nil {
			return fmt.Errorf("describing group %s: %s", g, serverMessage(err))
		}
		fmt.Fprintf(stdout, "%s configs for group %s are:\n", which, g)
		for _, e := range entries {
			switch {
			case !e.IsDefault:
				writeConfigEntry(stdout, e, "DYNAMIC_GROUP_CONFIG:"+e.Name+"="+e.Value)
			case all:
				writeConfigEntry(stdout, e, "DEFAULT_CONFIG:"+e.Name+"="+e.Value)
			}
		}
	}
	return nil
}
