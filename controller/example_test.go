package controller_test

import (
	"fmt"

	"github.com/partlog/partlog/controller"
)

// A machine with three nodes and one topic: node 0 stops heartbeating,
// and after the 9 s session (90 ticks of 100 ms) it is fenced and node 1
// leads in leader epoch 1.
func ExampleMachine() {
	c, err := controller.NewMachine(&controller.MemStore{}, controller.Options{})
	if err != nil {
		panic(err)
	}
	epochs := map[int32]int64{}
	for id := range int32(3) {
		if epochs[id], err = c.RegisterNode(id, ""); err != nil {
			panic(err)
		}
	}
	if err := c.CreateTopic("orders", 1, 3, controller.TopicConfig{}); err != nil {
		panic(err)
	}
	for _, u := range c.Updates() {
		s := u.State
		fmt.Printf("node %d applies leader %d, leader epoch %d, partition epoch %d, replicas %v, ISR %v\n",
			u.Node, s.Leader, s.LeaderEpoch, s.PartitionEpoch, s.Replicas, s.ISR)
	}
	for range 90 {
		for _, id := range []int32{1, 2} {
			if err := c.Heartbeat(id, epochs[id]); err != nil {
				panic(err)
			}
		}
		if err := c.Tick(); err != nil {
			panic(err)
		}
	}
	for _, u := range c.Updates() {
		s := u.State
		fmt.Printf("node %d applies leader %d, leader epoch %d, partition epoch %d, replicas %v, ISR %v\n",
			u.Node, s.Leader, s.LeaderEpoch, s.PartitionEpoch, s.Replicas, s.ISR)
	}
	// Output:
	// node 0 applies leader 0, leader epoch 0, partition epoch 0, replicas [0 1 2], ISR [0 1 2]
	// node 1 applies leader 0, leader epoch 0, partition epoch 0, replicas [0 1 2], ISR [0 1 2]
	// node 2 applies leader 0, leader epoch 0, partition epoch 0, replicas [0 1 2], ISR [0 1 2]
	// node 1 applies leader 1, leader epoch 1, partition epoch 1, replicas [0 1 2], ISR [1 2]
	// node 2 applies leader 1, leader epoch 1, partition epoch 1, replicas [0 1 2], ISR [1 2]
}
