"""The crawler: spiders, fetching, workers, and the `crawlog` command line."""
