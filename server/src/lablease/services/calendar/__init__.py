"""The calendar: advance reservations (Grid Engine's qrsub/qrstat/qrdel/qralter), their notices, reports
and work, and generic schedules of any resource."""
