"""declarations"""
