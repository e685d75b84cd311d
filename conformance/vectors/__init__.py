"""vectors"""
