"""What pages and operators read: the systems overview, timelines, the gauges operators watch."""
