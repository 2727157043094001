"""Operations: wiring and serving, start-up, live reload, replicas, status and metrics."""
