"""``python -m crawler.cli``: how a crawl starts its worker and projector processes."""

from crawler.cli import main

main()
