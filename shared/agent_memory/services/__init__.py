"""Domain services: pure logic over the ports."""
